"""What each part of watch's probe costs a short training program (issue 39: watch's cost on a 10-s program).

``tests/watch_programs/training.py`` (the decoder on cuda, its tiny size on the CPU; STEPS steps) runs plain and under
``sdpa-tui watch --report R --no-advice``, the probe whole or with one part switched off in the watched process:

- ``no-window``: no profiler window ever starts (no kernels, no kernel clock);
- ``no-check``: no forward check against float64 MATH and no gradient comparison (``output_check.MAX_CHECKS = 0``);
- ``no-sentinel``: no backward sentinel (no sampled call's gradients counted: ``gradient_sentinel.due`` never);
- ``no-warm-up``: the checks' kernels not loaded ahead, on the probe's thread, once the program has its context
  (``checks/kernel_warm_up.py``): they load at the checks' first run, on the program's thread;
- ``bare``: all three off (the wrapper, its timing and its sites);
- ``checks-in-window``: the checks due in a window run inside it, on the call, as before 2026-11-29 (not held until
  its stop: ``checks/held_checks.py``).

The parts are switched off by this file itself, run by watch as the program (``--as-program VARIANT``), which patches
the probe and then runs training.py as ``__main__``. Each run is a fresh process; variants alternate over ROUNDS
rounds. The table gives medians: the command's wall time, the build (model and optimizer, after the context), the
program's loop, each step (with more than 10 steps: the first, the sum of all, the steady step, each run's median
from the 11th step on, and the dearest others), and the time from the loop's end to the command's exit. With
``--keep-windows DIR`` each watched run's window log (``SDPA_TUI_KEEP_TRACES``: each window's start, stop and calls)
is kept in DIR and printed with its run, its traces deleted.

    python3 scripts/diagnostics/diag_watch_parts.py [--device cuda] [--steps 3] [--rounds 3] [--variants a,b]
        [--keep-windows DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "watch_programs" / "training.py"
VARIANTS = ("plain", "watched", "no-window", "no-check", "no-sentinel", "no-warm-up", "bare", "checks-in-window")


def as_program(variant: str, argv: list[str]) -> None:
    """In the watched process, before training.py's first line: switch the variant's parts off."""
    from sdpa_tui.watch.probe.checks import gradient_sentinel, kernel_warm_up, output_check
    from sdpa_tui.watch.probe.checks.held_checks import HeldChecks
    from sdpa_tui.watch.probe.kernels.bursts import KernelBursts

    if variant in ("no-window", "bare"):
        KernelBursts.cover = lambda self, never_profiled: None
        KernelBursts.poll = lambda self: False
    if variant in ("no-check", "bare"):
        output_check.MAX_CHECKS = 0
    if variant in ("no-sentinel", "bare"):
        gradient_sentinel.due = lambda count: False
    if variant == "no-warm-up":
        kernel_warm_up.run_checks_once = lambda device, go_on: 0
    if variant == "checks-in-window":
        HeldChecks.hold = lambda self, run, tensors, owe: False
    sys.argv = [str(PROGRAM), *argv]
    runpy.run_path(str(PROGRAM), run_name="__main__")


def run_once(variant: str, device: str, steps: int, tmp: str, keep: str | None = None) -> dict:
    times = os.path.join(tmp, "times.json")
    if os.path.exists(times):
        os.unlink(times)
    args = [times, str(steps), device, "decoder"]
    if variant == "plain":
        argv = [sys.executable, str(PROGRAM), *args]
    else:
        argv = [sys.executable, "-m", "sdpa_tui", "watch", "--report", os.path.join(tmp, "calls.json"), "--no-advice",
                "--", sys.executable, __file__, "--as-program", variant, *args]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    if keep and variant != "plain":
        os.makedirs(keep, exist_ok=True)
        env["SDPA_TUI_KEEP_TRACES"] = keep
    t0 = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    ended = time.time()
    if proc.returncode != 0:
        sys.exit(f"{variant} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    own = json.loads(Path(times).read_text())
    got = {"variant": variant, "wall_s": ended - t0, "build_s": own["loop"] - own["device_ready"],
           "loop_s": own["ended"] - own["loop"],
           "after_s": ended - own["ended"], "step_ms": own["step_ms"], "device": own.get("device_name")}
    if keep and variant != "plain":
        got["windows"] = [line.rstrip() for log in sorted(Path(keep).glob("windows-*.log"))
                          for line in log.read_text().splitlines()]
        for kept in Path(keep).iterdir():
            kept.unlink()
        got["loop_started"] = own["loop"]
    return got


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--as-program":
        as_program(sys.argv[2], sys.argv[3:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--keep-windows", metavar="DIR")
    args = parser.parse_args()
    variants = args.variants.split(",")
    if not set(variants) <= set(VARIANTS):
        parser.error(f"--variants: a comma-separated list of {', '.join(VARIANTS)}")
    results: dict[str, list[dict]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for v in variants if r % 2 == 0 else variants[::-1]:
                got = run_once(v, args.device, args.steps, tmp,
                               os.path.join(args.keep_windows, f"{v}-{r}") if args.keep_windows else None)
                results[v].append(got)
                print(json.dumps(got), flush=True)
    print(f"{'variant':<12} {'wall s':>7} {'build s':>7} {'loop s':>7} {'after s':>7}  steps ms   (medians over "
          f"{args.rounds} rounds)")
    for v, runs in results.items():
        steps = [statistics.median(x["step_ms"][i] for x in runs) for i in range(args.steps)]
        if len(steps) > 10:
            dearest = sorted(range(1, len(steps)), key=lambda i: -steps[i])[:6]
            steady = statistics.median(statistics.median(x["step_ms"][10:]) for x in runs)
            shown = (f"first {steps[0]:.1f}, all {sum(steps):.1f}, steady {steady:.2f} (each run's median step from "
                     f"the 11th), dearest others " + ", ".join(f"#{i} {steps[i]:.1f}" for i in sorted(dearest)))
        else:
            shown = " ".join(f"{s:.1f}" for s in steps)
        print(f"{v:<12} {statistics.median(x['wall_s'] for x in runs):7.2f} "
              f"{statistics.median(x['build_s'] for x in runs):7.2f} {statistics.median(x['loop_s'] for x in runs):7.3f} {statistics.median(x['after_s'] for x in runs):7.3f}"
              f"  {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
