"""Where a watched training step's added time comes from (GPU): the wrapper, the profiler windows, CUPTI.

Runs ``tests/watch_programs/truth.py`` (a transformers Llama from a config: inference, N training
steps, an hd256 call, a compiled block) in fresh processes, alternated over rounds:

- ``plain``: python alone;
- ``wrapper``: the probe installed without profiler windows (what every call pays);
- ``windows``: the probe with its windows, CUPTI detached after a window with no other due within 10 s
  (watch's default, ``sdpa_tui/watch/probe/kernels/cupti_detach.py``);
- ``windows, CUPTI attached``: the same with ``TEARDOWN_CUPTI=0`` (Kineto's own default: attached from the first
  window on);
- ``sdpa-tui watch``: the whole command, its parent process and report included.

Prints the median training step per variant (all steps but two, and the second half alone: past the
schedule's window at 3 s when the run is long enough) against plain, and writes JSON with every step time.
For the variants with windows, each run keeps its windows' log (``SDPA_TUI_KEEP_TRACES``): the steps that
overlapped a window (from its start to the end of its stop) are counted, and the median of the steps outside
every window is printed apart, so the windows' own cost and what stays between them are told apart: a window's
cost is what its steps took beyond that median (its start, which attaches CUPTI again after a detach, its
profiled steps, its stop). The mean step (the run's total) is printed beside the median. The machine's own
noise shows in the rounds: every round's medians are printed and kept.

With ``--llama large`` the step is GPU-bound (truth.py's ``SDPA_TUI_TEST_LLAMA=large``: 8 layers, a batch
[8, 1024]), as a real training step is; the default small step is host-bound, where the host's own noise is
several per cent.

    python3 benchmarks/watch_cost/watch_step_cost.py --steps 1000 --rounds 2 --json out.json
    python3 benchmarks/watch_cost/watch_step_cost.py --llama large --steps 300 --rounds 3 --only windows --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "watch_programs" / "truth.py"
PROBE = ("import runpy, sys; from sdpa_tui.watch.probe.install import install; install(None, kernel_bursts={bursts}); "
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


def window_spans(keep: Path) -> list[tuple[float, float]]:
    """(start, end of stop) of every window in the kept log (``time.monotonic``, as the program's step starts)."""
    spans, start = [], None
    for log in keep.glob("windows-*.log"):
        for line in log.read_text().splitlines():
            if line.startswith(" "):
                continue
            stamp, _, what = line.partition(" ")
            if what == "start":
                start = float(stamp)
            elif what.startswith("stop") and start is not None:
                spans.append((start, float(stamp)))
                start = None
    return sorted(spans)


def in_windows(steps: list[float], starts: list[float], spans: list[tuple[float, float]]) -> list[bool]:
    return [any(a < t0 + ms / 1e3 and t0 < b for a, b in spans) for ms, t0 in zip(steps, starts)]


def run(args: list[str], env: dict[str, str], steps_path: str, keep: Path | None, llama: str) -> dict:
    full = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
            "SDPA_TUI_TEST_STEPS": steps_path, "SDPA_TUI_TEST_LLAMA": llama, **env}
    if keep is not None:
        keep.mkdir()
        full["SDPA_TUI_KEEP_TRACES"] = str(keep)
    proc = subprocess.run(args, capture_output=True, text=True, env=full, cwd=ROOT, timeout=900)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    got = json.loads(Path(steps_path).read_text())
    spans = window_spans(keep) if keep is not None else []
    got["in_window"] = in_windows(got["step_ms"], got["start_s"], spans)
    got["windows"] = len(spans)
    if keep is not None:
        shutil.rmtree(keep)
    return got


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", required=True)
    parser.add_argument("--llama", choices=("small", "large"), default="small",
                        help="small: a host-bound step (about 9 ms on an H100); large: a GPU-bound one")
    parser.add_argument("--only", action="append", help="run only this variant (and plain); repeatable")
    args = parser.parse_args()
    times: dict[str, list[list[float]]] = {}
    outside: dict[str, list[list[float]]] = {}
    windowed: dict[str, list[int]] = {}
    flags: dict[str, list[list[bool]]] = {}
    window_cost: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        table = variants(args.steps, os.path.join(tmp, "calls.json"))
        if args.only:
            unknown = set(args.only) - set(table)
            if unknown:
                parser.error(f"no variant {sorted(unknown)}; the variants: {', '.join(table)}")
            table = {name: v for name, v in table.items() if name == "plain" or name in args.only}
        for r in range(args.rounds):
            names = list(table) if r % 2 == 0 else list(table)[::-1]
            for name in names:
                keep = Path(tmp, f"windows-{r}-{len(times.get(name, []))}") if "windows" in name else None
                got = run(*table[name], os.path.join(tmp, "steps.json"), keep, args.llama)
                steps = got["step_ms"]
                times.setdefault(name, []).append(steps)
                out_steps = [ms for ms, w in list(zip(steps, got["in_window"]))[2:] if not w]
                outside.setdefault(name, []).append(out_steps)
                windowed.setdefault(name, []).append(sum(got["in_window"]))
                flags.setdefault(name, []).append(got["in_window"])
                away = statistics.median(out_steps)
                cost = sum(ms - away for ms, w in zip(steps, got["in_window"]) if w) / 1e3
                window_cost.setdefault(name, []).append(cost / max(got["windows"], 1))
                extra = (f"; {sum(got['in_window'])} steps in {got['windows']} windows, outside them {away:.3f} ms; "
                         f"{cost:.2f} s beyond that in the windows") if keep is not None else ""
                print(f"round {r}: {name}: median step {statistics.median(steps[2:]):.3f} ms{extra}", flush=True)
                with open(f"{args.json}.runs.jsonl", "a") as raw:  # kept if the benchmark is cut short
                    raw.write(json.dumps({"round": r, "variant": name, "step_ms": steps,
                                          "in_window": got["in_window"], "windows": got["windows"]}) + "\n")

    def mean(name: str) -> float:
        return statistics.median(statistics.mean(t[2:]) for t in times[name])

    def median(name: str, late: bool) -> float:
        return statistics.median(statistics.median(t[len(t) // 2:] if late else t[2:]) for t in times[name])

    base, base_late = median("plain", False), median("plain", True)
    print(f"{'variant':<26} {'step ms':>9} {'added':>8} {'late step ms':>13} {'added':>8} {'outside windows':>16}"
          f" {'added':>8} {'mean step':>10} {'added':>8} {'steps in windows':>17} {'s per window':>13}")
    out = {"steps": args.steps, "rounds": args.rounds, "llama": args.llama, "variants": {}}
    for name in times:
        m, late = median(name, False), median(name, True)
        away = statistics.median(statistics.median(t) for t in outside[name])
        print(f"{name:<26} {m:>9.3f} {(m / base - 1) * 100:>+7.2f}% {late:>13.3f} {(late / base_late - 1) * 100:>+7.2f}%"
              f" {away:>16.3f} {(away / base - 1) * 100:>+7.2f}% {mean(name):>10.3f} {(mean(name) / mean('plain') - 1) * 100:>+7.2f}%"
              f" {statistics.median(windowed[name]):>17.0f} {statistics.median(window_cost[name]):>13.3f}")
        out["variants"][name] = {"step_ms": m, "late_step_ms": late, "added_pct": (m / base - 1) * 100,
                                 "late_added_pct": (late / base_late - 1) * 100, "outside_windows_step_ms": away,
                                 "outside_added_pct": (away / base - 1) * 100, "steps_in_windows": windowed[name],
                                 "mean_step_ms": mean(name), "mean_added_pct": (mean(name) / mean("plain") - 1) * 100,
                                 "window_cost_s": window_cost[name], "in_window": flags[name],
                                 "round_medians_ms": [statistics.median(t[2:]) for t in times[name]],
                                 "step_times_ms": times[name]}
    Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
