"""Is watch's advice realised? Watch a program with ``--report`` (advice measured after it exits), apply the top
change to the program's source as its code says (``tests/support/advice_apply.py``), watch the changed program again, and
set the saving per call the lab predicted beside the one measured in the program. Prints a table, writes JSON.

    python3 benchmarks/watch_truth/advice_realised.py                 # the CPU: advised_context.py, MATH → Flash
    python3 benchmarks/watch_truth/advice_realised.py --device cuda   # a GPU: its hd256 bf16 call, Mem-efficient → cuDNN
    python3 benchmarks/watch_truth/advice_realised.py --device cuda --program odd_head_dim  # head dim 100 on MATH, padded

A program that prints ``loop_us_per_call=`` (odd_head_dim.py) is also run without watch, before and after, and its
loop's own time set beside: a rewrite outside the SDPA call (the pads of a padded head dim) costs there, not in the
call's kernels.

FlexAttention is left out of the advice (``--no-flex``): it leaves SDPA, so the changed program's call could not be
watched again (tests/processes/watch/test_advice_realised.py says when it came first).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from recorded import run_header, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from support.advice_apply import apply_top_advice  # noqa: E402

PROGRAMS = ROOT / "tests" / "watch_programs"


def loop_us(stdout: str) -> float | None:
    loop = [float(line.split("=", 1)[1]) for line in stdout.splitlines() if line.startswith("loop_us_per_call=")]
    return loop[0] if loop else None


def plain_loop_us(program: Path, args: list[str]) -> float | None:
    """The program's own loop time per call, run without watch (its windows and checks would be in a watched one)."""
    proc = subprocess.run([sys.executable, str(program), *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=900, stdin=subprocess.DEVNULL)
    return loop_us(proc.stdout) if proc.returncode == 0 else None


def watched(program: Path, args: list[str], report: Path, advice: bool) -> dict:
    cmd = [sys.executable, "-m", "sdpa_tui", "watch", "--report", str(report), *([] if advice else ["--no-advice"]),
           "--no-flex", "--", sys.executable, str(program), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=900, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(report.read_text())


def per_call(call: dict) -> tuple[float, str]:
    """The program's measured time per call: the kernels' (a GPU), else the host's (the CPU)."""
    if call["kernel_us"]["n"]:
        return call["kernel_us"]["median"], "kernel (CUPTI)"
    return call["host_us"]["median"], "host"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--program", choices=("advised_context", "odd_head_dim"), default="advised_context")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    program = PROGRAMS / f"{args.program}.py"
    started = dt.datetime.now(dt.timezone.utc)
    program_args = ["cuda"] if args.device == "cuda" else []
    with tempfile.TemporaryDirectory() as tmp:
        before = watched(program, program_args, Path(tmp, "before.json"), advice=True)
        tops = before["advice"]["top"] if before.get("advice") else []
        if not tops:
            sys.exit(f"no advice to apply: {before.get('advice')}")
        top = tops[0]
        changed = Path(tmp, program.name)
        changed.write_text(apply_top_advice(program.read_text(), top))
        after = watched(changed, program_args, Path(tmp, "after.json"), advice=False)
        loop_before, loop_after = plain_loop_us(program, program_args), plain_loop_us(changed, program_args)
    (call,), (again,) = before["calls"], after["calls"]
    (was, clock), (now, _) = per_call(call), per_call(again)
    predicted, realised = top["saving_us_per_call"], was - now
    print(f"{program.name} on {args.device}: {top['from']} → {top['to']} ({top['variant']}), applied as: {top['code']}")
    print(f"{'':12} {'backend':22} {'µs per call':>12}  clock")
    print(f"{'before':12} {call['backend']:22} {was:>12.1f}  {clock} in the program")
    print(f"{'after':12} {again['backend']:22} {now:>12.1f}  {clock} in the program")
    print(f"saving per call: predicted {predicted:.1f} µs (the lab's {before['calls'][0]['advice']['clock']} clock), "
          f"realised {realised:.1f} µs ({realised / predicted:.0%} of predicted)")
    if loop_before is not None and loop_after is not None:
        print(f"the program's loop per call, run without watch (host clock, synchronised; everything the change "
              "costs): "
              f"{loop_before:.1f} → {loop_after:.1f} µs, {loop_before - loop_after:.1f} µs saved")
    write_result({**run_header(started, argv, args.device), "program": program.name, "top": top,
                  "loop_us_per_call": {"before": loop_before, "after": loop_after},
                  "before": {"backend": call["backend"], "us": was}, "after": {"backend": again["backend"], "us": now},
                  "clock": clock, "predicted_us": predicted, "realised_us": realised}, args.json,
                 f"advice-realised-{args.device}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
