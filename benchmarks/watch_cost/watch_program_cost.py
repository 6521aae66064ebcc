"""What ``sdpa-tui watch`` costs a whole training program, end to end: the same program plain and watched, alternated.

The program is ``tests/watch_programs/training.py`` at a size per target (``--size``). On a GPU a target under 30 s
gets ``decoder``, a decoder-only transformer in plain torch (bf16, hidden 1024, 6 layers, causal SDPA): it imports no
transformers (on an H200 its start-up is still 7 to 10 s, torch's import and ``torch._dynamo``'s at its optimizer's
construction, so there a 10-s program may be its floor of steps). The Llama that transformers builds
(``large``, about 59 ms a step on an H100) spent 11 to 15 s there before its first step, so its "10-s" program was
the benchmark's floor of 3 steps, its start-up measured and not a short training run; it stays the program of the
longer targets (a transformers user's program, about 40 s of steps in a minute on an H100, comparable with the H100
runs before). On the CPU, ``tiny`` (a 2-layer Llama) by default. Each size first runs each variant once, a few
steps, left out (a fresh machine's first run reads torch from disk), then three plain calibration runs, the middle one
by its time besides its steps kept: its steady step (the median step after the first two: the first steps' warm-up,
2.5 s on an H100 for ``large``, left out) and what the command takes besides its steps at that pace (start-up,
warm-up, exit); each target (``--seconds``, e.g. 10 and 60) then gets the number of steps that makes the plain command
last that long, and runs plain and watched in alternation (plain first in even rounds, watched first in odd ones),
``--rounds`` times. Watched is what a user types, headless:

    python3 -m sdpa_tui watch --report R.json --no-advice -- python3 training.py ...

(``--no-advice``: the alternatives' measuring after the program exits is a measurement the user asks for, with its
own budget, not watch's cost on the program; ``--advice`` adds the default command as a third variant.)

Per run: the wall time of the whole command (from its start to its exit: what the user pays), the program's own time
(its first line to its end, its own clock), its median and mean step, and for watched runs the windows the report
counts and what they cost (``captures``). Per target: medians with their spread (min-max) and the added time, both as
the ratio of the medians and per round (each watched run against the plain run beside it: their median and spread,
and the interval where the median round lies with 90 % confidence, ``median_interval``; ``program_cost_pooled.py``
pools several runs' rounds),
and each round's added seconds split where the loop begins (``added_s``: the start-up before it swings by seconds
between runs on a GPU machine; the loop and the exit after it hold watch's windows and checks), that second part
split again (``loop_split``: the first steps, the steps after an evaluation, the other steps, the evaluations, the
exit; each run keeps its steps' times, ``step_ms``). A table on stdout,
JSON (each size's calibration under ``calibrations``, each target with its size, steps and runs) to ``--json``
(default ``benchmarks/results/watch-program-cost-<device>-<date>.json``, the device named as the program found it:
h100 or h200 where the GPU's name says so, else cuda; cpu).

    python3 benchmarks/watch_cost/watch_program_cost.py --device cuda --seconds 10,60 --rounds 4,2 --size decoder,large
    python3 benchmarks/watch_cost/watch_program_cost.py --device cpu --size decoder --seconds 3 --rounds 1 --json out.json

``--add-to EARLIER.json`` adds rounds to an earlier result of the same machine (a device call's time limit is short
of enough rounds of a 1-minute program): its targets' runs are kept, this run's rounds follow at the same step
counts (no calibration; the warm-ups run again), the alternation goes on where it stopped, and the summary is over
all of them:

    python3 benchmarks/watch_cost/watch_program_cost.py --seconds 60 --rounds 3 --size large --json a.json
    python3 benchmarks/watch_cost/watch_program_cost.py --seconds 60 --rounds 3 --size large --add-to a.json --json b.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from recorded import run_header, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "watch_programs" / "training.py"
SIZES = ("large", "decoder", "tiny")
CALIBRATION_STEPS = {"large": 30, "decoder": 30, "tiny": 5}
CALIBRATION_RUNS = 3  # sized from the middle one (middle_calibration)
LARGE_FROM_S = 30.0  # on a GPU, a target this long or longer runs the large Llama; a shorter one the plain-torch decoder


def commands(report: str, advice: bool) -> dict[str, list[str]]:
    """The variants: the command that runs the program (its own arguments appended)."""
    py = sys.executable
    watch = [py, "-m", "sdpa_tui", "watch", "--report", report]
    out = {"plain": [], "watched": [*watch, "--no-advice", "--"]}
    if advice:
        out["watched, advice"] = [*watch, "--"]
    return out


def default_size(target_s: float, device: str) -> str:
    """The program's size for a target: on the CPU the tiny Llama; on a GPU the plain-torch decoder under
    ``LARGE_FROM_S`` (the large Llama's start-up alone is longer than a short target), the large Llama from there."""
    if not device.startswith("cuda"):
        return "tiny"
    return "decoder" if target_s < LARGE_FROM_S else "large"


def run_once(prefix: list[str], steps: int, size: str, args: argparse.Namespace, tmp: str) -> dict:
    """One run of the program at ``size`` under ``prefix`` (plain: none): its wall time, its own clock, and the
    report's windows."""
    times = os.path.join(tmp, "times.json")
    report = os.path.join(tmp, "calls.json")
    for stale in (times, report):
        if os.path.exists(stale):
            os.unlink(stale)
    argv = [*prefix, sys.executable, str(PROGRAM), times, str(steps), args.device, size]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    t0 = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=args.timeout)
    wall = time.time() - t0
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    own = json.loads(Path(times).read_text())
    steps_ms = own["step_ms"]
    got = {"wall_s": wall, "program_s": own["ended"] - own["started"], "start_up_s": own["loop"] - t0,
           "loop_s": own["ended"] - own["loop"], **start_up_phases(own, t0, wall),
           "steps": len(steps_ms), "evals": own["evals"],
           "median_step_ms": statistics.median(steps_ms[2:] or steps_ms), "mean_step_ms": statistics.mean(steps_ms),
           "device_name": own["device_name"], "step_ms": [round(ms, 3) for ms in steps_ms],
           "eval_every": own.get("eval_every")}
    if prefix:
        captures = json.loads(Path(report).read_text()).get("captures", {})
        got["windows"] = captures.get("count", 0)
        got["captures"] = captures
        got["windows_cost_s"] = sum(float(captures.get(k, 0.0)) for k in ("start_s", "profiled_s", "stop_s", "export_s"))
    return got


PHASES = ("before_program_s", "torch_import_s", "device_s", "build_s", "loop_s", "after_s")
"""The command's wall time split at the program's own clock: the command's start to the program's first line (plain:
python's start; watched: watch's, the bootstrap's import of torch and the probe's install), torch's import in the
program (under watch done before its first line: about 0), the device's context made (on the CPU: 0), the model and
optimizer built, the training loop, and the loop's end to the command's exit."""


def start_up_phases(own: dict, t0: float, wall: float) -> dict:
    """:data:`PHASES` of one run, from the program's clock (``training.py``) and the command's start and wall time."""
    return {"before_program_s": own["started"] - t0, "torch_import_s": own["imported"] - own["started"],
            "device_s": own["device_ready"] - own["imported"], "build_s": own["loop"] - own["device_ready"],
            "after_s": t0 + wall - own["ended"]}


def phases_table(summary: dict) -> str:
    """Each variant's median seconds in each of :data:`PHASES`, and what watch added to each (its median less
    plain's)."""
    lines = [f"{'phase, median s':<17} " + " ".join(f"{name:>18}" for name in summary)]
    plain = summary["plain"]
    for phase in PHASES:
        cells = []
        for name, row in summary.items():
            cell = f"{row[phase]['median']:.2f}"
            if name != "plain":
                cell += f" ({row[phase]['median'] - plain[phase]['median']:+.2f})"
            cells.append(f"{cell:>18}")
        lines.append(f"{phase.removesuffix('_s'):<17} " + " ".join(cells))
    return "\n".join(lines)


def sizing(calibration: dict) -> dict:
    """From the plain calibration run: its steady step (the median after the warm-up's first steps) and the rest of
    its command's wall time (start-up, warm-up, the exit), what a target's steps are added to."""
    steady_s = calibration["median_step_ms"] / 1e3
    return {"steady_step_ms": calibration["median_step_ms"],
            "besides_steps_s": calibration["wall_s"] - calibration["steps"] * steady_s}


def middle_calibration(tries: list[dict]) -> dict:
    """Of the plain calibration runs (each with its :func:`sizing`), the one whose time besides its steps is the
    median, their times under ``tries``. One run's time besides its steps can be seconds off the runs after it: on an
    H200 of 2026-11-29 the one calibration took 12.79 s besides its 30 steps, and the eight plain rounds after it
    (3 steps each) 8.13 to 12.52 s in all."""
    middle = sorted(tries, key=lambda t: t["besides_steps_s"])[(len(tries) - 1) // 2]
    kept = ("wall_s", "start_up_s", "steady_step_ms", "besides_steps_s")
    return {**middle, "tries": [{key: t[key] for key in kept} for t in tries]}


FLOOR_STEPS = 3


def fitted_steps(target_s: float, sized: dict) -> int:
    """The steps that make the plain command last ``target_s`` at the steady step (none or fewer where the command's
    start-up and exit alone take that long)."""
    return round((target_s - sized["besides_steps_s"]) / (sized["steady_step_ms"] / 1e3))


def target_steps(target_s: float, sized: dict) -> int:
    """``fitted_steps``, ``FLOOR_STEPS`` at least."""
    return max(FLOOR_STEPS, fitted_steps(target_s, sized))


def start_up_note(target_s: float, sized: dict) -> str | None:
    """Where the plain command's start-up and exit leave the target no room for its steps: what its number is then."""
    if fitted_steps(target_s, sized) >= FLOOR_STEPS:
        return None
    return (f"~{target_s:g} s: the plain command took {sized['besides_steps_s']:.2f} s besides its steps on this machine, "
            f"so the target runs the floor of {FLOOR_STEPS} steps: its added time is the start-up's and the first steps', "
            f"not a {target_s:g}-s training run's (a longer --seconds gives one)")


def device_tag(device_name: str | None) -> str:
    """The device in a result's file name: h100 or h200 where the GPU's name holds it, else cuda; cpu for none."""
    if device_name is None:
        return "cpu"
    found = re.search(r"h100|h200", device_name.lower())
    return found.group() if found else "cuda"


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def median_interval(values: list[float], level: float = 0.9) -> dict | None:
    """Where the median of what ``values`` were drawn from lies, with at least ``level`` confidence, assuming only that
    they are independent draws: the narrowest pair of order statistics, symmetric by rank, that a Binomial(n, ½) count
    of draws below the median keeps between them that often (the sign test's interval; no resampling, the same
    answer every time). ``coverage`` is the pair's own confidence, at least ``level``; None with too few values for
    it (fewer than 5 for 90 %)."""
    ordered, n = sorted(values), len(values)
    below = [math.comb(n, i) / 2**n for i in range(n + 1)]  # P(exactly i draws below the median)
    for k in reversed(range((n - 1) // 2)):  # the k-th smallest and the k-th largest (from 0), widening from the middle
        coverage = 1 - 2 * sum(below[: k + 1])
        if coverage >= level:
            return {"low": ordered[k], "high": ordered[n - k - 1], "coverage": coverage, "level": level, "n": n}
    return None


def added_split(watched: list[dict], plain: list[dict]) -> dict:
    """What watch added per round (each watched run less the plain run beside it), in seconds, split where the
    program's loop begins: before it (the command's start, the imports, the context, the model and optimizer built:
    on a GPU machine this start-up swings by seconds from run to run, plain and watched alike) and from it on (the
    training loop and the exit: watch's windows and checks). The two add up to the round's added wall time."""
    before = [w["start_up_s"] - p["start_up_s"] for w, p in zip(watched, plain)]
    after = [(w["wall_s"] - w["start_up_s"]) - (p["wall_s"] - p["start_up_s"]) for w, p in zip(watched, plain)]
    return {"before_loop_s": spread(before), "from_loop_s": spread(after)}


FIRST_STEPS = 3
"""The loop's first steps, apart in :func:`loop_parts`: a new signature's first window starts at its first call and
ends, with its first checks, within them (the decoder's second step)."""
LOOP_PARTS = ("first_steps_s", "after_evaluation_s", "other_steps_s", "outside_steps_s", "exit_s")


def loop_parts(run: dict) -> dict | None:
    """One run's loop and exit split in seconds (:data:`LOOP_PARTS`): its first :data:`FIRST_STEPS` steps, the steps
    right after an evaluation (the evaluation's signature is new at its first one: its window stops in the training
    step after it), the other steps, the loop's time outside the steps (the evaluations, the loss read) and the exit;
    ``other_steps``, how many those were. They add up to the loop and the exit. None for a run recorded without its
    steps (before 2026-11-29)."""
    steps, every = run.get("step_ms"), run.get("eval_every")
    if steps is None or not every:
        return None
    after_evaluation = [steps[i] for i in range(every, len(steps), every) if i >= FIRST_STEPS]
    first, total = sum(steps[:FIRST_STEPS]) / 1e3, sum(steps) / 1e3
    return {"first_steps_s": first, "after_evaluation_s": sum(after_evaluation) / 1e3,
            "other_steps_s": total - first - sum(after_evaluation) / 1e3, "outside_steps_s": run["loop_s"] - total,
            "exit_s": run["after_s"], "other_steps": len(steps) - min(len(steps), FIRST_STEPS) - len(after_evaluation)}


def loop_split(watched: list[dict], plain: list[dict]) -> dict | None:
    """What watch added per round from the loop on (:func:`added_split`'s ``from_loop_s``), part by part
    (:func:`loop_parts`): where its windows, checks and per-call work fall. None where a run lacks its steps."""
    pairs = [(loop_parts(w), loop_parts(p)) for w, p in zip(watched, plain)]
    if not pairs or any(w is None or p is None for w, p in pairs):
        return None
    split = {part: spread([w[part] - p[part] for w, p in pairs]) for part in LOOP_PARTS}
    split["other_steps"] = pairs[0][0]["other_steps"]
    return split


def added_split_lines(summary: dict) -> list[str]:
    """:func:`added_split` of each watched variant, in words, with the loop's part as a share of plain's median wall."""
    plain_wall = summary["plain"]["wall_s"]["median"]
    lines = []
    for name, row in summary.items():
        if "added_s" not in row:
            continue
        added = row.get("wall_s_added_pct", {})
        interval = added.get("median_round_interval")
        if interval:
            lines.append(f"{name}, the median round {added['per_round']['median']:+.1f}%, and where "
                         f"it lies with {interval['coverage']:.0%} confidence: {interval['low']:+.1f}% to "
                         f"{interval['high']:+.1f}% ({interval['n']} rounds' ranks, the sign test's interval)")
        before, after = row["added_s"]["before_loop_s"], row["added_s"]["from_loop_s"]
        lines.append(f"{name}, added per round, median [min..max]: before the loop {before['median']:+.2f} s "
                     f"[{before['min']:+.2f}..{before['max']:+.2f}], the loop and the exit {after['median']:+.2f} s "
                     f"[{after['min']:+.2f}..{after['max']:+.2f}] ({after['median'] / plain_wall * 100:+.1f}% of "
                     f"plain's median wall)")
        loop = row.get("loop_split")
        if loop:
            def part(key: str) -> str:
                s = loop[key]
                return f"{s['median']:+.3f} s [{s['min']:+.3f}..{s['max']:+.3f}]"

            per_step = loop["other_steps_s"]["median"] / max(loop["other_steps"], 1) * 1e3
            lines.append(f"{name}, the loop and the exit per round, median [min..max]: the first {FIRST_STEPS} steps "
                         f"{part('first_steps_s')}, the steps after an evaluation {part('after_evaluation_s')}, the "
                         f"other {loop['other_steps']} steps {part('other_steps_s')} ({per_step:+.2f} ms a step), the "
                         f"loop outside its steps (evaluations) {part('outside_steps_s')}, the exit {part('exit_s')}")
    return lines


def summarise(runs: dict[str, list[dict]]) -> dict:
    """Per variant: medians and spreads; against plain: the ratio of the medians, the per-round ratios and the
    per-round added seconds before and from the loop (:func:`added_split`)."""
    out: dict = {}
    plain = runs["plain"]
    for name, rows in runs.items():
        row = {key: spread([r[key] for r in rows])
               for key in ("wall_s", "program_s", "median_step_ms", "mean_step_ms", *PHASES)}
        if name != "plain":
            row["windows"] = spread([r["windows"] for r in rows])
            row["windows_cost_s"] = spread([r["windows_cost_s"] for r in rows])
            for key in ("wall_s", "program_s", "median_step_ms"):
                paired = [(w[key] / p[key] - 1) * 100 for w, p in zip(rows, plain)]
                row[f"{key}_added_pct"] = {"of_medians": (row[key]["median"] / spread([p[key] for p in plain])["median"]
                                                          - 1) * 100, "per_round": spread(paired),
                                           "median_round_interval": median_interval(paired)}
            row["added_s"] = added_split(rows, plain)
            loop = loop_split(rows, plain)
            if loop:
                row["loop_split"] = loop
        out[name] = row
    return out


def table(target: float, steps: int, size: str, summary: dict) -> str:
    def cell(s: dict, fmt: str) -> str:
        return f"{s['median']:{fmt}} [{s['min']:{fmt}}-{s['max']:{fmt}}]"

    lines = [f"~{target:g}-s program ({steps} steps, {size}): medians [min-max]",
             f"{'variant':<17} {'wall s':>22} {'added':>8} {'per round, median [min..max]':>30} {'program s':>22} {'added':>8} "
             f"{'step ms':>24} {'added':>8} {'windows':>8} {'windows cost s':>20}"]
    for name, row in summary.items():
        def added(key: str) -> str:
            return f"{row[key]['of_medians']:+7.1f}%" if key in row else f"{'':>8}"

        def rounds(key: str) -> str:
            if key not in row:
                return f"{'':>30}"
            s = row[key]["per_round"]
            return f"{s['median']:+.1f}% [{s['min']:+.1f}..{s['max']:+.1f}]".rjust(30)

        windows = f"{row['windows']['median']:>8g}" if "windows" in row else f"{'':>8}"
        cost = cell(row["windows_cost_s"], ".2f").rjust(20) if "windows_cost_s" in row else f"{'':>20}"
        lines.append(f"{name:<17} {cell(row['wall_s'], '.2f'):>22} {added('wall_s_added_pct')} "
                     f"{rounds('wall_s_added_pct')} {cell(row['program_s'], '.2f'):>22} "
                     f"{added('program_s_added_pct')} {cell(row['median_step_ms'], '.2f'):>24} "
                     f"{added('median_step_ms_added_pct')} {windows} {cost}")
    return "\n".join(lines)


def earlier_targets(path: str, result: dict) -> dict[tuple[float, str], dict]:
    """``--add-to``: the earlier result's targets by (seconds, size); its calibrations and GPU carried into
    ``result``, and where it came from."""
    previous = json.loads(Path(path).read_text())
    for key in ("host", "device"):  # the same machine's rounds only
        if previous.get(key) != result[key]:
            sys.exit(f"--add-to {path}: its {key} was {previous.get(key)}, this run's is {result[key]}")
    result["calibrations"].update(previous.get("calibrations", {}))
    result["gpu"] = previous.get("gpu")
    result["added_to"] = {"file": os.path.basename(path), "date": previous.get("date"),
                          "rounds": {f"{t['seconds']:g} s": t["rounds"] for t in previous["targets"]}}
    return {(float(t["seconds"]), t["size"]): t for t in previous["targets"]}


def numbers(text: str, kind: type) -> list:
    return [kind(x.strip()) for x in text.split(",") if x.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (the numbers that count) or cpu")
    parser.add_argument("--seconds", default="10,60", help="the plain program's length per target, comma-separated")
    parser.add_argument("--rounds", default="4,2", help="rounds per target (one number: every target)")
    parser.add_argument("--size", help=f"the program's size, {'|'.join(SIZES)}: one for every target or one per "
                        f"target, comma-separated (default: on cuda decoder under {LARGE_FROM_S:g} s, large from there; "
                        "tiny on cpu)")
    parser.add_argument("--advice", action="store_true", help="add the default command (advice measured after exit)")
    parser.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                        help="calibrate on the first run (by default each variant runs once first, left out)")
    parser.add_argument("--timeout", type=float, default=600.0, help="one run's limit in seconds")
    parser.add_argument("--json", help="where the result goes (default: benchmarks/results/…)")
    parser.add_argument("--add-to", metavar="JSON",
                        help="an earlier result of this benchmark on the same machine: its targets' runs are kept and "
                        "this run's rounds added, at its step counts (no calibration)")
    args = parser.parse_args()
    targets, rounds = numbers(args.seconds, float), numbers(args.rounds, int)
    if not targets or any(t <= 0 for t in targets) or not rounds or any(r < 1 for r in rounds):
        parser.error("--seconds and --rounds take positive numbers")
    sizes = numbers(args.size, str) if args.size else [default_size(t, args.device) for t in targets]
    if any(s not in SIZES for s in sizes):
        parser.error(f"--size takes {', '.join(SIZES)}")
    rounds = rounds * len(targets) if len(rounds) == 1 else rounds
    sizes = sizes * len(targets) if len(sizes) == 1 else sizes
    if len(rounds) != len(targets) or len(sizes) != len(targets):
        parser.error("--rounds and --size take one value, or one per --seconds")
    started = dt.datetime.now(dt.timezone.utc)
    result = {**run_header(started, None, args.device), "program": "tests/watch_programs/training.py",
              "calibrations": {}, "targets": []}
    earlier = earlier_targets(args.add_to, result) if args.add_to else {}
    with tempfile.TemporaryDirectory() as tmp:
        variants = commands(os.path.join(tmp, "calls.json"), args.advice)
        for size in dict.fromkeys(sizes):
            # each variant once, a few steps, left out: on a fresh machine the first run reads torch's libraries
            # from disk (a fresh H200's first calibration, 2026-11-28, took 12.7 s besides its steps, the runs after
            # it 8.2 to 9.3 s), which sized the 10-s target at 3 steps
            for name in (variants if args.warm_up else ()):
                got = run_once(variants[name], 3, size, args, tmp)
                result.setdefault("warm_ups", []).append({"size": size, "variant": name, "wall_s": got["wall_s"]})
                print(f"warm-up, {size}, {name}: {got['wall_s']:.2f} s wall (left out)", flush=True)
            if all((t, z) in earlier for t, z in zip(targets, sizes) if z == size):
                continue  # every target of this size adds to an earlier result's runs, at its steps
            tries = []
            for _ in range(CALIBRATION_RUNS):
                got = run_once([], CALIBRATION_STEPS[size], size, args, tmp)
                tries.append({**got, **sizing(got)})
                print(f"calibration, {size}: {got['wall_s']:.2f} s wall, start-up {got['start_up_s']:.2f} s, "
                      f"{got['steps']} steps: steady {tries[-1]['steady_step_ms']:.1f} ms a step (mean "
                      f"{got['mean_step_ms']:.1f}), {tries[-1]['besides_steps_s']:.2f} s besides the steps", flush=True)
            calibration = middle_calibration(tries)
            result["calibrations"][size] = calibration
            result["gpu"] = calibration["device_name"]
            print(f"calibration, {size}: sized from the run with {calibration['besides_steps_s']:.2f} s besides its "
                  f"steps (the middle of {len(tries)})", flush=True)
        for target, count, size in zip(targets, rounds, sizes):
            before = earlier.get((target, size))
            steps = before["steps"] if before else target_steps(target, result["calibrations"][size])
            runs: dict[str, list[dict]] = {name: list(before["runs"].get(name, [])) if before else []
                                           for name in variants}
            first = before["rounds"] if before else 0
            for r in range(first, first + count):
                order = list(variants) if r % 2 == 0 else list(variants)[::-1]
                for name in order:
                    got = run_once(variants[name], steps, size, args, tmp)
                    if before and got["device_name"] != result["gpu"]:
                        sys.exit(f"--add-to {args.add_to} ran on {result['gpu']}, this run on {got['device_name']}")
                    runs[name].append({"round": r, **got})
                    extra = (f", {got['windows']} windows costing {got['windows_cost_s']:.2f} s"
                             if "windows" in got else "")
                    print(f"~{target:g} s, round {r}: {name}: {got['wall_s']:.2f} s wall, {got['program_s']:.2f} s "
                          f"in the program, median step {got['median_step_ms']:.2f} ms{extra}", flush=True)
            summary = summarise(runs)
            note = start_up_note(target, result["calibrations"][size])
            print(table(target, steps, size, summary), flush=True)
            print(phases_table(summary), flush=True)
            print("\n".join(added_split_lines(summary)), flush=True)
            if note:
                print(f"note: {note}", flush=True)
            result["targets"].append({"seconds": target, "size": size, "steps": steps, "rounds": first + count,
                                      "start_up_fills_target": note is not None, "summary": summary, "runs": runs})
    write_result(result, args.json, f"watch-program-cost-{device_tag(result['gpu'])}-{started.date()}.json")
    return 0

if __name__ == "__main__":
    sys.exit(main())
