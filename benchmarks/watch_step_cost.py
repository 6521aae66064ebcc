"""Where a watched training step's added time comes from (GPU): the wrapper, the profiler windows, CUPTI.

Runs ``tests/watch_programs/truth.py`` (a transformers Llama from a config: inference, N training
steps, an hd256 call, a compiled block) in fresh processes, alternated over rounds:

- ``plain``: python alone;
- ``wrapper``: the probe installed without profiler windows (what every call pays);
- ``windows``: the probe with its windows, CUPTI detached after a window with no other due within 10 s
  (watch's default, ``sdpa_tui/watch/cupti_detach.py``);
- ``windows, CUPTI attached``: the same with ``TEARDOWN_CUPTI=0`` (Kineto's own default: attached from the first
  window on);
- ``sdpa-tui watch``: the whole command, its parent process and report included.

Prints the median training step per variant (all steps but two, and the second half alone: past the
schedule's window at 3 s when the run is long enough) against plain, and writes JSON with every step time.

    python3 benchmarks/watch_step_cost.py --steps 1000 --rounds 2 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "watch_programs" / "truth.py"
PROBE = ("import runpy, sys; from sdpa_tui.watch.install import install; install(None, kernel_bursts={bursts}); "
         "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")


def variants(steps: int, report: str) -> dict[str, tuple[list[str], dict[str, str]]]:
    program = [str(PROGRAM), str(steps)]
    py = sys.executable
    return {
        "plain": ([py, *program], {}),
        "wrapper": ([py, "-c", PROBE.format(bursts=False), *program], {}),
        "windows": ([py, "-c", PROBE.format(bursts=True), *program], {}),
        "windows, CUPTI attached": ([py, "-c", PROBE.format(bursts=True), *program], {"TEARDOWN_CUPTI": "0"}),
        "sdpa-tui watch": ([py, "-m", "sdpa_tui", "watch", "--report", report, "--", py, *program], {}),
    }


def run(args: list[str], env: dict[str, str], steps_path: str) -> list[float]:
    full = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            "SDPA_TUI_TEST_STEPS": steps_path, **env}
    proc = subprocess.run(args, capture_output=True, text=True, env=full, cwd=ROOT, timeout=900)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(Path(steps_path).read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", required=True)
    parser.add_argument("--only", action="append", help="run only the variants whose name holds this word (and plain); "
                        "repeatable")
    args = parser.parse_args()
    times: dict[str, list[list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        table = variants(args.steps, os.path.join(tmp, "calls.json"))
        if args.only:
            table = {name: v for name, v in table.items() if name == "plain" or any(w in name for w in args.only)}
        for r in range(args.rounds):
            names = list(table) if r % 2 == 0 else list(table)[::-1]
            for name in names:
                steps = run(*table[name], os.path.join(tmp, "steps.json"))
                times.setdefault(name, []).append(steps)
                print(f"round {r}: {name}: median step {statistics.median(steps[2:]):.3f} ms", flush=True)

    def median(name: str, late: bool) -> float:
        return statistics.median(statistics.median(t[len(t) // 2:] if late else t[2:]) for t in times[name])

    base, base_late = median("plain", False), median("plain", True)
    print(f"{'variant':<26} {'step ms':>9} {'added':>8} {'late step ms':>13} {'added':>8}")
    out = {"steps": args.steps, "rounds": args.rounds, "variants": {}}
    for name in times:
        m, late = median(name, False), median(name, True)
        print(f"{name:<26} {m:>9.3f} {(m / base - 1) * 100:>+7.2f}% {late:>13.3f} {(late / base_late - 1) * 100:>+7.2f}%")
        out["variants"][name] = {"step_ms": m, "late_step_ms": late, "added_pct": (m / base - 1) * 100,
                                 "late_added_pct": (late / base_late - 1) * 100, "step_times_ms": times[name]}
    Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
