"""The CPU kernel clock against the eager clock beside a busy core, one checkout against another, alternated.

Issue 39: with one core busy, ``report --seq 2048`` read Flash's kernel clock (the profiler process's burst) at 1.54x
its eager clock (the timing engine's loop). This runs ``report --device cpu --json`` beside a process that spins one
core, for each checkout in turn (``--before`` and ``--after``, each the folder its ``sdpa_tui`` is imported from; the
side that goes first swaps from round to round), and prints, per run and backend, the kernel and eager medians and
their ratio, then each side's median ratio and its spread (lowest to highest). Writes JSON under
benchmarks/results/. A shared machine is noisy: read the spread, not one run.

    python3 benchmarks/clocks/cpu_kernel_clock.py --before /path/to/other/checkout --rounds 3
    python3 benchmarks/clocks/cpu_kernel_clock.py --seq 1024 --rounds 4          # this checkout alone
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from headless_load import SPIN  # noqa: E402
from recorded import load_average, run_header, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def report(tree: Path, args: argparse.Namespace) -> dict:
    """One ``report`` run imported from ``tree``: per running backend its kernel and eager medians (µs)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "r.json")
        cmd = [sys.executable, "-m", "sdpa_tui", "report", "--device", "cpu", "--batch", str(args.batch),
               "--heads", "8", "--seq", str(args.seq), "--head-dim", "64", "--dtype", args.dtype, "--json", str(out)]
        env = {**os.environ, "PYTHONPATH": str(tree)}
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tree, env=env, timeout=1800,
                              stdin=subprocess.DEVNULL)
        wall = time.monotonic() - t0
        if proc.returncode != 0 or not out.exists():
            return {"wall_s": wall, "exit": proc.returncode, "error": proc.stderr.strip()[-300:], "backends": {}}
        body = json.loads(out.read_text())
    backends = {b["backend"]: {"kernel_us": b["kernel_us"], "eager_us": b["eager_us"],
                               "kernel_samples": b["clocks"]["kernel"]["samples"],
                               "ratio": b["kernel_us"] / b["eager_us"]}
                for b in body["backends"] if b["kernel_us"] and b["eager_us"]}
    return {"wall_s": wall, "exit": 0, "backends": backends}


def summary(runs: list[dict]) -> dict:
    """Per side and backend: the median of the runs' kernel/eager ratios, the lowest and the highest."""
    out: dict = {}
    for run in runs:
        for backend, row in run["backends"].items():
            out.setdefault(run["side"], {}).setdefault(backend, []).append(row["ratio"])
    return {side: {b: {"runs": len(r), "median": statistics.median(r), "low": min(r), "high": max(r)}
                   for b, r in by_backend.items()} for side, by_backend in out.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, default=None, help="the other checkout (default: none, this one alone)")
    parser.add_argument("--after", type=Path, default=ROOT, help="this side's checkout (default: this one)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--dtype", default="fp16")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    started = dt.datetime.now(dt.timezone.utc)
    sides = {"after": args.after.resolve(), **({"before": args.before.resolve()} if args.before else {})}
    runs: list[dict] = []
    spinner = subprocess.Popen([sys.executable, "-c", SPIN])  # one core busy
    try:
        for i in range(args.rounds):
            order = list(sides) if i % 2 == 0 else list(reversed(sides))
            for side in order:
                run = {"round": i + 1, "side": side, "load_average": load_average(),
                       **report(sides[side], args)}
                runs.append(run)
                rows = "  ".join(f"{b.split('_')[0].title()} kernel {r['kernel_us']:,.0f} eager {r['eager_us']:,.0f} "
                                 f"({r['ratio']:.2f}x)" for b, r in run["backends"].items())
                print(f"round {i + 1} {side:6} {run['wall_s']:6.1f} s  {rows or run.get('error')}", flush=True)
    finally:
        spinner.kill()
        spinner.wait()
    table = summary(runs)
    print(f"\nkernel / eager beside a busy core, [{args.batch}, 8, {args.seq}, 64] {args.dtype}:")
    for side, by_backend in table.items():
        for backend, s in by_backend.items():
            print(f"  {side:6} {backend:18} median {s['median']:.2f}x  ({s['low']:.2f}-{s['high']:.2f}, {s['runs']} runs)")
    write_result({**run_header(started, argv, "cpu"), "workload": [args.batch, 8, args.seq, 64], "dtype": args.dtype,
                  "load": "one core busy (a spinning Python process)", "sides": {k: str(v.name) for k, v in sides.items()},
                  "runs": runs, "summary": table}, args.json, f"cpu-kernel-clock-cpu-{dt.date.today()}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
