"""Host time added per SDPA call by ``sdpa-tui watch``'s wrapper (fast path), with and without it.

Prints a table and writes JSON. Shapes: a tiny one and the blog's [2, 8, 512, 64] (fp16 on CUDA,
fp32 on the CPU). Interleaved repeats, the minimum per variant (the least-disturbed run).
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import torch
import torch.nn.functional as F

from sdpa_tui.watch.probe import install

SHAPES = {"tiny [1, 2, 8, 16]": (1, 2, 8, 16), "blog [2, 8, 512, 64]": (2, 8, 512, 64)}


def per_call_us(q, calls: int) -> float:
    sdpa = F.scaled_dot_product_attention  # looked up as callers do, after install()
    if q.is_cuda:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        sdpa(q, q, q, is_causal=True)
    if q.is_cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    device = torch.device(args.device)
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    original = F.scaled_dot_product_attention
    probe = install(None)
    wrapper = F.scaled_dot_product_attention
    rows = []
    for label, shape in SHAPES.items():
        q = torch.randn(*shape, device=device, dtype=dtype)
        calls = 20000 if shape[2] <= 8 else (2000 if device.type == "cuda" else 50)
        for fn in (original, wrapper):
            F.scaled_dot_product_attention = fn
            per_call_us(q, max(10, calls // 10))  # warm-up, and the wrapper's first call
        best = {"plain": float("inf"), "watched": float("inf")}
        for _ in range(args.repeats):
            for name, fn in (("plain", original), ("watched", wrapper)):
                F.scaled_dot_product_attention = fn
                best[name] = min(best[name], per_call_us(q, calls))
        rows.append({"shape": label, "dtype": str(dtype), "calls": calls, "plain_us": best["plain"],
                     "watched_us": best["watched"], "added_us": best["watched"] - best["plain"]})
    F.scaled_dot_product_attention = original
    print(f"{'shape':<22} {'plain µs':>10} {'watched µs':>11} {'added µs':>9}")
    for r in rows:
        print(f"{r['shape']:<22} {r['plain_us']:>10.2f} {r['watched_us']:>11.2f} {r['added_us']:>9.2f}")
    result = {"device": str(device), "machine": platform.node() if device.type == "cpu" else torch.cuda.get_device_name(),
              "processor": platform.processor(), "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
              "counted": sum(e.count for e in probe.entries), "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
