"""Host time added per SDPA call by ``sdpa-tui watch``'s wrapper (fast path), with and without it.

Prints a table and writes JSON. Shapes: a tiny one and the blog's [2, 8, 512, 64] (fp16 on CUDA,
fp32 on the CPU). Interleaved repeats (alternating which goes first), the minimum per variant (the least-disturbed run).
The probe's profiler bursts (CUDA only, a few half-seconds per run) are off here: this measures the
wrapper every call pays. On the CPU torch runs on one thread (a shared machine's other cores make a multi-threaded
step's time swing by more than the wrapper costs). The fast path alone: the wrapper around a function that does
nothing, against that function called directly, on the same tensors (what the wrapper adds, without torch's own
time per call and its noise). Then a real model's step: a transformers Llama from a config with random weights (no download),
forward + backward + SGD step, timed with the plain function and with the wrapper in place.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from recorded import command_line  # noqa: E402

from sdpa_tui.watch.probe.install import install  # noqa: E402

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


def _order(i: int, original, wrapper):
    """Plain first on even repeats, watched first on odd ones: neither gets the warmer turn."""
    pairs = [("plain", original), ("watched", wrapper)]
    return pairs if i % 2 == 0 else pairs[::-1]


def fast_path_us(q, calls: int, repeats: int) -> dict:
    """The wrapper's own host time per call: its fast path around a no-op, minus the no-op called directly."""
    from sdpa_tui.watch.probe.fast_path import make_wrapper
    from sdpa_tui.watch.probe.slow_path import Probe

    def nothing(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        return query

    probe = Probe(None, kernel_bursts=False)
    wrapper = make_wrapper(nothing, probe)
    for _ in range(2):  # the first calls take the slow path (signature, module); then the fast one
        wrapper(q, q, q, is_causal=True)
    probe._stop.set()

    def timed(fn) -> float:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(q, q, q, is_causal=True)
        return (time.perf_counter() - t0) / calls * 1e6

    best = {"plain": float("inf"), "watched": float("inf")}
    for i in range(repeats):
        for name, fn in _order(i, nothing, wrapper):
            best[name] = min(best[name], timed(fn))
    return {"shape": f"fast path alone {list(q.shape)}", "dtype": str(q.dtype), "calls": calls,
            "plain_us": best["plain"], "watched_us": best["watched"], "added_us": best["watched"] - best["plain"]}


def llama_step(device: torch.device):
    """One training step of a small Llama (bf16 on CUDA, fp32 on the CPU), and its SDPA calls per step."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cuda = device.type == "cuda"
    config = LlamaConfig(
        vocab_size=1024, hidden_size=512 if cuda else 128, intermediate_size=1376 if cuda else 256,
        num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=512,
        attn_implementation="sdpa",
    )
    model = LlamaForCausalLM(config).to(device, torch.bfloat16 if cuda else torch.float32)
    ids = torch.randint(0, config.vocab_size, (4 if cuda else 2, 256 if cuda else 64), device=device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step() -> None:
        loss = model(ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step, config.num_hidden_layers, f"Llama {config.num_hidden_layers}x{config.hidden_size}, ids {list(ids.shape)}"


def per_step_ms(step, steps: int, cuda: bool) -> float:
    if cuda:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps * 1e3


def model_row(device: torch.device, original, wrapper, repeats: int, steps: int) -> dict:
    step, calls_per_step, label = llama_step(device)
    best = {"plain": float("inf"), "watched": float("inf")}
    for fn in (original, wrapper):
        F.scaled_dot_product_attention = fn
        per_step_ms(step, 2, device.type == "cuda")  # warm-up, and the wrapper's first calls
    for i in range(repeats):
        for name, fn in _order(i, original, wrapper):
            F.scaled_dot_product_attention = fn
            best[name] = min(best[name], per_step_ms(step, steps, device.type == "cuda"))
    F.scaled_dot_product_attention = original
    return {"model": label, "steps": steps, "sdpa_calls_per_step": calls_per_step, "plain_ms": best["plain"],
            "watched_ms": best["watched"], "slowdown_pct": (best["watched"] / best["plain"] - 1) * 100}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=5, help="model steps per timed run (0: no model row)")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(1)
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    original = F.scaled_dot_product_attention
    probe = install(None, kernel_bursts=False)  # the steady state: no profiler burst inside a timed run
    wrapper = F.scaled_dot_product_attention
    rows = []
    for label, shape in SHAPES.items():
        q = torch.randn(*shape, device=device, dtype=dtype)
        calls = 20000 if shape[2] <= 8 else (2000 if device.type == "cuda" else 50)
        for fn in (original, wrapper):
            F.scaled_dot_product_attention = fn
            per_call_us(q, max(10, calls // 10))  # warm-up, and the wrapper's first call
        best = {"plain": float("inf"), "watched": float("inf")}
        for i in range(args.repeats):
            for name, fn in _order(i, original, wrapper):
                F.scaled_dot_product_attention = fn
                best[name] = min(best[name], per_call_us(q, calls))
        rows.append({"shape": label, "dtype": str(dtype), "calls": calls, "plain_us": best["plain"],
                     "watched_us": best["watched"], "added_us": best["watched"] - best["plain"]})
    F.scaled_dot_product_attention = original
    rows.append(fast_path_us(torch.randn(2, 8, 512, 64, device=device, dtype=dtype), 200000, args.repeats))
    model = model_row(device, original, wrapper, args.repeats * 2, args.steps) if args.steps else None
    print(f"{'shape':<34} {'plain µs':>10} {'watched µs':>11} {'added µs':>9}")
    for r in rows:
        print(f"{r['shape']:<34} {r['plain_us']:>10.2f} {r['watched_us']:>11.2f} {r['added_us']:>9.2f}")
    result = {"device": str(device), "machine": platform.node() if device.type == "cpu" else torch.cuda.get_device_name(),
              "processor": platform.processor(), "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"), "threads": torch.get_num_threads(), "kernel_bursts": False,
              "command": command_line(),
              "counted": sum(e.count for e in probe.entries), "rows": rows, "model_step": model}
    if model:
        print(f"{model['model']}: {model['plain_ms']:.2f} ms per step plain, {model['watched_ms']:.2f} ms watched "
              f"({model['slowdown_pct']:+.2f} %, {model['sdpa_calls_per_step']} SDPA calls per step)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
