"""Host time per SDPA call in each rank of a ``torchrun`` job, plain and under ``sdpa-tui watch`` (issue: distributed
watch): the wrapper installed in each worker by watch's start-up hook, not by watch's own launch of the program.

Runs ``tests/watch_programs/rank_timing.py`` with ``torchrun --nproc_per_node N --standalone``, plain and watched
(``--no-advice``), alternated over rounds (fresh processes each time); each rank times its calls after a warm-up
that holds watch's first profiler windows, and keeps its least-disturbed run. Prints per rank the median over rounds
and what watch added, and writes JSON.

    python3 benchmarks/watch_cost/watch_rank_overhead.py                         # the CPU, 2 ranks (gloo)
    python3 benchmarks/watch_cost/watch_rank_overhead.py --device cuda --ranks 2 # ranks on the GPUs there (gloo)
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from recorded import run_header, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "watch_programs" / "rank_timing.py"
LINE = re.compile(r"rank (\d+) per_call_us=(\d+\.\d{3})")  # ranks print at once: lines may run together


def run(watched: bool, ranks: int, device: str, report: Path) -> dict[int, float]:
    job = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(ranks), "--standalone",
           str(PROGRAM), "--device", device]
    cmd = [sys.executable, "-m", "sdpa_tui", "watch", "--no-advice", "--report", str(report), "--", *job] \
        if watched else job
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600, stdin=subprocess.DEVNULL)
    found = {int(r): float(us) for r, us in LINE.findall(proc.stdout)}
    if proc.returncode != 0 or len(found) != ranks:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    started = dt.datetime.now(dt.timezone.utc)
    times: dict[str, dict[int, list[float]]] = {"plain": {}, "watched": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = ("plain", "watched") if r % 2 == 0 else ("watched", "plain")
            for name in order:
                got = run(name == "watched", args.ranks, args.device, Path(tmp, f"calls-{r}.json"))
                for rank, us in got.items():
                    times[name].setdefault(rank, []).append(us)
                print(f"round {r}: {name}: " + ", ".join(f"rank {k} {v:.2f} µs" for k, v in sorted(got.items())),
                      flush=True)
    print(f"{'rank':>4} {'plain µs/call':>14} {'watched µs/call':>16} {'added µs':>9}")
    rows = []
    for rank in sorted(times["plain"]):
        plain, watched = (statistics.median(times[n][rank]) for n in ("plain", "watched"))
        rows.append({"rank": rank, "plain_us": plain, "watched_us": watched, "added_us": watched - plain,
                     "rounds": {n: times[n][rank] for n in times}})
        print(f"{rank:>4} {plain:>14.2f} {watched:>16.2f} {watched - plain:>+9.2f}")
    write_result({**run_header(started, argv, args.device), "ranks": args.ranks, "rows": rows}, args.json,
                 f"watch-rank-overhead-{args.device}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
