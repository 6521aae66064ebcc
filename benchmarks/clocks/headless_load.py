"""How long ``sdpa-tui report`` takes, by the cost of one call, on an idle machine and with a core kept busy.

On a shared 2-core machine `report --seq 2048` once ran 601 s and failed: kernel bursts every second, each
slower than a second under load, left the engine waiting instead of timing (issue 21, item 1). Bursts are now
spaced by four times their own cost, and a report whose time runs out shows what it has, marked. This runs
``report --json`` for workloads whose calls cost from tens of µs to about a second (fp32, every backend), idle
and beside a process that spins one core, and prints the wall time, whether the result was complete, and the
pick's median. Writes JSON.

    python3 benchmarks/clocks/headless_load.py                 # the CPU
    python3 benchmarks/clocks/headless_load.py --device cuda --seqs 4096,16384,65536 --dtype bf16
    python3 benchmarks/clocks/headless_load.py --seqs 128 --sweep 512,1024 --batch 4 --dtype bf16 --causal --direction fwd+bwd

``--sweep`` times a ``sweep`` too under each load (issue 21 saw ``sweep --batch 4 --dtype bf16 --causal --direction
fwd+bwd --seq 512,1024`` fail after 611 s with a core busy).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from recorded import run_header, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SPIN = "import time\nwhile True:\n    time.perf_counter()\n"


def report(device: str, seq: int, dtype: str, causal: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "r.json")
        cmd = [sys.executable, "-m", "sdpa_tui", "report", "--device", device, "--batch", "1", "--heads", "8",
               "--seq", str(seq), "--head-dim", "64", "--dtype", dtype, "--json", str(out),
               *(["--causal"] if causal else [])]
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=900, stdin=subprocess.DEVNULL)
        wall = time.monotonic() - t0
        if proc.returncode != 0 or not out.exists():
            return {"seq": seq, "wall_s": wall, "exit": proc.returncode, "error": proc.stderr.strip()[-300:]}
        d = json.loads(out.read_text())
    pick = d["dispatch"]["choice"]
    row = next((b for b in d["backends"] if b["backend"] == pick), None)
    return {"seq": seq, "wall_s": wall, "exit": 0, "complete": not d.get("incomplete"), "incomplete": d.get("incomplete"),
            "pick": pick, "pick_eager_us": row and row.get("eager_us")}


def sweep(device: str, seqs: str, dtype: str, causal: bool, batch: int, direction: str) -> dict:
    """``sweep --seq SEQS`` at [batch, 8, L, 64]: its wall time, exit status, and the lengths whose time was up."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "s.json")
        cmd = [sys.executable, "-m", "sdpa_tui", "sweep", "--device", device, "--batch", str(batch), "--heads", "8",
               "--seq", seqs, "--head-dim", "64", "--dtype", dtype, "--direction", direction, "--json", str(out),
               *(["--causal"] if causal else [])]
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=1800, stdin=subprocess.DEVNULL)
        wall = time.monotonic() - t0
    few = [line.strip() for line in proc.stderr.splitlines() if "time was up" in line]
    return {"sweep": seqs, "batch": batch, "direction": direction, "wall_s": wall, "exit": proc.returncode,
            "complete": proc.returncode == 0 and not few, "incomplete": few,
            "error": proc.stderr.strip()[-300:] if proc.returncode else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seqs", default="128,512,2048,4096")
    parser.add_argument("--dtype", default="fp32")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--sweep", default=None, metavar="SEQS",
                        help="also time `sweep --seq SEQS` (e.g. 512,1024) under each load")
    parser.add_argument("--batch", type=int, default=1, help="the sweep's batch (default 1)")
    parser.add_argument("--direction", default="fwd", help="the sweep's direction: fwd or fwd+bwd")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    started = dt.datetime.now(dt.timezone.utc)
    rows = []
    for load in ("idle", "one core busy"):
        spinner = subprocess.Popen([sys.executable, "-c", SPIN]) if load != "idle" else None
        try:
            for seq in (int(s) for s in args.seqs.split(",")):
                rows.append({"load": load, **report(args.device, seq, args.dtype, args.causal)})
                r = rows[-1]
                state = "failed" if r["exit"] else ("complete" if r["complete"] else "few samples")
                eager = f"{r['pick_eager_us']:,.1f}" if r.get("pick_eager_us") else "—"
                print(f"{load:14} seq {seq:>6}  {r['wall_s']:7.1f} s  {state:12} pick {r.get('pick') or '—':20}"
                      f" eager {eager} µs", flush=True)
            if args.sweep:
                rows.append({"load": load, **sweep(args.device, args.sweep, args.dtype, args.causal, args.batch,
                                                   args.direction)})
                r = rows[-1]
                state = "failed" if r["exit"] else ("complete" if r["complete"] else "few samples")
                print(f"{load:14} sweep {args.sweep} (batch {args.batch}, {args.direction})  {r['wall_s']:7.1f} s  {state}",
                      flush=True)
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
    write_result({**run_header(started, argv, args.device), "dtype": args.dtype, "rows": rows}, args.json,
                 f"headless-load-{args.device}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
