"""What ``sdpa-tui watch``'s sampled output check costs the watched program, per check and per run.

The check (``sdpa_tui/watch/probe/checks/output_check.py``) runs at a signature's first call and then every 4096th, at most
8 times: each time it compares the call's output with SDPA in float64 by MATH on copies of the inputs, which
waits for the GPU (a NaN test reads one value back). This times that whole check on the host (synchronised
before and after, as the program would see it), beside the call it checks, for a few real shapes: the cost a
program pays once per check, and at most 8 times per signature. Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from recorded import run_header, write_result  # noqa: E402

from sdpa_tui.core.calls.watched_calls import OutputCheck  # noqa: E402
from sdpa_tui.watch.probe.checks import output_check  # noqa: E402

# (label, batch, heads, kv heads, seq, head dim, causal)
SHAPES = [
    ("llama-1b [2,32,512,64] causal", 2, 32, 8, 512, 64, True),
    ("llama [4,32,2048,128] causal", 4, 32, 8, 2048, 128, True),
    ("bert [8,12,512,64]", 8, 12, 12, 512, 64, False),
    ("long [1,16,8192,128] causal", 1, 16, 16, 8192, 128, True),
]
CPU_SHAPES = [("small [1,4,256,64]", 1, 4, 4, 256, 64, False), ("llama-1b [1,8,512,64] causal", 1, 8, 2, 512, 64, True)]


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _timed(fn, device: str, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append((time.perf_counter() - t0) * 1e6)
    return times


def measure(shape, device: str, dtype, repeats: int) -> dict:
    label, b, h, hk, s, d, causal = shape
    gen = torch.Generator(device=device).manual_seed(0)
    q = torch.randn(b, h, s, d, device=device, dtype=dtype, generator=gen)
    k = torch.randn(b, hk, s, d, device=device, dtype=dtype, generator=gen)
    v = torch.randn(b, hk, s, d, device=device, dtype=dtype, generator=gen)
    gqa = hk != h
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
    call = _timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa), device, repeats)
    checks: list[OutputCheck] = []

    def one_check():
        checks.append(OutputCheck())
        output_check.check_output(checks[-1], out, q, k, v, None, 0.0, causal, None, gqa)

    one_check()  # the first float64 call builds its own plans
    cost = _timed(one_check, device, repeats)
    last = checks[-1]
    check_us = statistics.median(cost)
    return {"shape": label, "dtype": str(dtype).removeprefix("torch."), "call_us": round(statistics.median(call), 1),
            "check_us": round(check_us, 1), "check_p90_us": round(sorted(cost)[int(0.9 * (len(cost) - 1))], 1),
            "per_run_max_ms": round(check_us * output_check.MAX_CHECKS / 1e3, 2),
            "checked": last.samples == 1, "note": last.note or None, "rel_error": last.max_rel_error,
            "ok": last.ok}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", default=None, help="where to write the result (default benchmarks/results/)")
    args = parser.parse_args(argv)
    started = dt.datetime.now(dt.timezone.utc)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    shapes = SHAPES if device == "cuda" else CPU_SHAPES
    dtypes = [torch.float16, torch.bfloat16] if device == "cuda" else [torch.float32]
    rows = [measure(shape, device, dtype, args.repeats) for shape in shapes for dtype in dtypes]
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(f"output check cost on {name}, torch {torch.__version__} (median of {args.repeats}; at most "
          f"{output_check.MAX_CHECKS} checks per signature, the first call then every {output_check.CHECK_EVERY}th)")
    print(f"{'shape':32} {'dtype':9} {'call µs':>10} {'check µs':>11} {'p90':>10} {'≤ per run':>10}  result")
    for r in rows:
        result = f"rel err {r['rel_error']:.1e} ok" if r["checked"] and r["ok"] else (r["note"] or f"ok={r['ok']}")
        print(f"{r['shape']:32} {r['dtype']:9} {r['call_us']:>10.1f} {r['check_us']:>11.1f} {r['check_p90_us']:>10.1f}"
              f" {r['per_run_max_ms']:>8.2f}ms  {result}")
    header = run_header(started, argv, name)
    write_result({**header, "torch": torch.__version__, "repeats": args.repeats, "rows": rows}, args.json,
                        "watch-check-cost.json")


if __name__ == "__main__":
    main()
