"""What the Python API costs a program's SDPA calls, against the command's: the same loop of calls run plain, under
``sdpa-tui watch`` and inside ``with watch():``, in fresh processes, alternated over rounds.

Each run times ``--calls`` SDPA calls (after ``--calls`` // 10 of warm-up, the first calls' slow path included there)
and prints its host time per call; the table shows each variant's median over the rounds, its spread and what it
adds to plain. ``--no-advice``: the command measures no alternatives after the program (the API's block measures
none unless ``w.report.advice()`` is asked). On a GPU the profiler windows run in both watched variants; on the CPU
there are none.

    python3 benchmarks/watch_cost/api_cost.py --device cpu --rounds 5 --json benchmarks/results/api-cost-cpu-DATE.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from recorded import command_line  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LOOP = r"""
import os, sys, time, torch
import torch.nn.functional as F
device, calls, shape = sys.argv[1], int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")]
torch.set_num_threads(1)
q = torch.randn(*shape, device=device, dtype=torch.float16 if device == "cuda" else torch.float32)

def loop(n):
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6

def run():
    loop(max(1, calls // 10))
    print(f"PER_CALL_US {loop(calls):.4f}", flush=True)

if os.environ.get("SDPA_TUI_BENCH_API"):
    from sdpa_tui import watch
    with watch():
        run()
else:
    run()
"""
VARIANTS = ("plain", "command", "api")


def one_run(variant: str, script: Path, device: str, calls: int, shape: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    program = [sys.executable, str(script), device, str(calls), shape]  # a file: watch runs scripts, not -c
    if variant == "command":
        cmd = [sys.executable, "-m", "sdpa_tui", "watch", "--no-advice", "--report", os.devnull, "--", *program]
    else:
        cmd = program
        if variant == "api":
            env["SDPA_TUI_BENCH_API"] = "1"
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    for line in out.stdout.splitlines():
        if line.startswith("PER_CALL_US "):
            return float(line.split()[1])
    raise RuntimeError(f"{variant}: no time in its output (exit {out.returncode}): {out.stderr[-800:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--shape", default="1,2,8,16", help="B,H,N,D of the loop's call (default a tiny one)")
    parser.add_argument("--json", help="where the result goes")
    args = parser.parse_args()
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "sdpa_call_loop.py"
        script.write_text(LOOP, encoding="utf-8")
        for i in range(args.rounds):
            order = VARIANTS if i % 2 == 0 else VARIANTS[::-1]  # neither end of a round always goes first
            for variant in order:
                times[variant].append(one_run(variant, script, args.device, args.calls, args.shape))
            print(f"round {i}: " + ", ".join(f"{v} {times[v][-1]:.2f} µs" for v in VARIANTS), flush=True)
    plain = statistics.median(times["plain"])
    print(f"{'variant':<10}{'µs per call (median)':>22}{'min-max':>18}{'added µs':>10}")
    summary = {}
    for v in VARIANTS:
        med = statistics.median(times[v])
        summary[v] = {"median_us": med, "min_us": min(times[v]), "max_us": max(times[v]), "added_us": med - plain}
        print(f"{v:<10}{med:>22.2f}{f'{min(times[v]):.2f}-{max(times[v]):.2f}':>18}{med - plain:>+10.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "date": time.strftime("%Y-%m-%d"), "command": command_line(), "device": args.device,
            "machine": platform.node(), "cpus": os.cpu_count(), "shape": args.shape, "calls": args.calls,
            "rounds": args.rounds, "times_us": times, "summary": summary}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
