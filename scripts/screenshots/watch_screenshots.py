"""Screenshots of ``sdpa-tui watch``: a real program watched, its Calls view, then the lab after ``t``.

    python3 scripts/screenshots/watch_screenshots.py --device cuda --out docs/screenshots/ --tag h100

Runs tests/watch_programs/steady.py on ``--device`` under the real app (the real lab engine),
waits until its calls have times (and, on a GPU, kernels), saves the Calls view, presses ``t``
on the busiest call, waits for the lab's numbers and saves the lab. Quitting stops both. Then
tests/watch_programs/advised_context.py (a call kept on a slower backend) is watched until it exits,
``b`` measures the alternatives, and the Calls view with its advice is saved (``watch-advice-TAG.svg``).
With ``--only compiled``: tests/watch_programs/compiled_mask.py's compiled row beside its eager twin
(``watch-compiled-TAG.svg``). With ``--only widths``: tests/watch_programs/models_mix.py (a Llama with GQA and a
padded batch, a GPT-2, an nn.MultiheadAttention in eval, a compiled call) watched live, its Calls view at each of
``WIDTHS`` (``watch-calls-WxH-TAG.svg``, the terminal resized between them). With ``--only gradients`` (a GPU):
pytorch#196678's repro (tests/watch_programs/grad_nan_repro.py, L = 704) watched until it exits, its flagged row
selected (``watch-gradients-TAG.svg``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from screenshots import wait_until  # noqa: E402

from sdpa_tui.commands.watch_monitor import make_watch_app  # noqa: E402
from sdpa_tui.watch.program.watched_program import WatchedProgram  # noqa: E402


async def shoot(device: str, out: Path, tag: str, size: tuple[int, int]) -> list[Path]:
    log_path = str(Path(tempfile.mkdtemp(prefix="sdpa-tui-watch-shots-")) / "steady.log")
    os.chdir(ROOT)  # the banner shows the command as a user types it: no machine's paths in the picture
    python = shutil.which("python3")
    python = "python3" if python and os.path.samefile(python, sys.executable) else sys.executable
    watched = WatchedProgram([python, "tests/watch_programs/steady.py", "90", device])
    saved = []
    with open(log_path, "ab", buffering=0) as log:
        watched.log_to(log)
        app = make_watch_app(watched, log_path, device)
        async with app.run_test(size=size) as pilot:
            gpu = device != "cpu"

            def calls_ready() -> bool:
                rows = list(app.calls.rows.values()) if app.calls else []
                return len(rows) == 3 and all(r.time_us is not None and (r.kernels or not gpu) for r in rows)

            if not await wait_until(calls_ready, 120):
                print("warning: the calls did not all get times/kernels within 120 s", file=sys.stderr)
            await pilot.pause(2.0)
            saved.append(Path(app.save_screenshot(f"watch-calls-{tag}.svg", str(out))))
            await pilot.press("t")
            session = app.session

            def lab_ready() -> bool:
                states = [session.backends[b] for b in session.enabled]
                return session.environment is not None and all(
                    s.status in ("not_eligible", "error", "oom", "disabled") or len(s.eager) >= 8 for s in states)

            if not await wait_until(lab_ready, 120):
                print("warning: the lab had no full set of numbers within 120 s", file=sys.stderr)
            await pilot.pause(1.0)
            saved.append(Path(app.save_screenshot(f"watch-lab-{tag}.svg", str(out))))
            await pilot.press("q")
    return saved


ADVICE_SIZE = (210, 50)
"""Wide enough for the Calls view's best and saving columns, tall enough for the alternatives in the detail pane."""


async def shoot_advice(device: str, out: Path, tag: str, size: tuple[int, int]) -> Path:
    from sdpa_tui.watch.advice.advise import measure_advice

    log_path = str(Path(tempfile.mkdtemp(prefix="sdpa-tui-watch-shots-")) / "advised.log")
    python = shutil.which("python3")
    python = "python3" if python and os.path.samefile(python, sys.executable) else sys.executable
    watched = WatchedProgram([python, "tests/watch_programs/advised_context.py", *(["cuda"] if device != "cpu" else [])])
    with open(log_path, "ab", buffering=0) as log:
        watched.log_to(log)
        app = make_watch_app(watched, log_path, device)
        app.advisor = measure_advice
        async with app.run_test(size=size) as pilot:
            if not await wait_until(lambda: app.exit_code is not None and app.calls is not None and app.calls.rows, 180):
                print("warning: advised_context.py did not exit within 180 s", file=sys.stderr)
            await pilot.pause(1.0)
            await pilot.press("b")
            if not await wait_until(lambda: bool(app.calls.advice), 180):
                print("warning: no advice within 180 s", file=sys.stderr)
            await pilot.pause(1.0)
            path = Path(app.save_screenshot(f"watch-advice-{tag}.svg", str(out)))
            await pilot.press("q")
    return path


async def shoot_compiled(device: str, out: Path, tag: str, size: tuple[int, int]) -> Path:
    """tests/watch_programs/compiled_mask.py (a BERT trained eager, then compiled: pytorch#177712's pattern) watched
    until it exits, the compiled row selected: its detail pane sets the graph beside the eager calls."""
    log_path = str(Path(tempfile.mkdtemp(prefix="sdpa-tui-watch-shots-")) / "compiled.log")
    python = shutil.which("python3")
    python = "python3" if python and os.path.samefile(python, sys.executable) else sys.executable
    args = ["cuda", "bfloat16", "20"] if device != "cpu" else []
    watched = WatchedProgram([python, "tests/watch_programs/compiled_mask.py", *args])
    with open(log_path, "ab", buffering=0) as log:
        watched.log_to(log)
        app = make_watch_app(watched, log_path, device)
        async with app.run_test(size=size) as pilot:
            if not await wait_until(lambda: app.exit_code is not None and app.calls is not None and app.calls.rows, 240):
                print("warning: compiled_mask.py did not exit within 240 s", file=sys.stderr)
            await pilot.pause(1.0)
            for _ in range(len(app.calls.rows)):
                row = app.calls.selected_row()
                if row is not None and row.compiled:
                    break
                await pilot.press("down")
            await pilot.pause(0.5)
            path = Path(app.save_screenshot(f"watch-compiled-{tag}.svg", str(out)))
            await pilot.press("q")
    return path


WIDTHS = ((120, 40), (100, 30), (80, 24))


async def shoot_widths(device: str, out: Path, tag: str) -> list[Path]:
    log_path = str(Path(tempfile.mkdtemp(prefix="sdpa-tui-watch-shots-")) / "models_mix.log")
    python = shutil.which("python3")
    python = "python3" if python and os.path.samefile(python, sys.executable) else sys.executable
    watched = WatchedProgram([python, "tests/watch_programs/models_mix.py", "120", device, "compiled"])
    saved = []
    with open(log_path, "ab", buffering=0) as log:
        watched.log_to(log)
        app = make_watch_app(watched, log_path, device)
        async with app.run_test(size=WIDTHS[0]) as pilot:
            def timed() -> bool:  # the Llama's and the GPT-2's calls timed, the compiled one and the fast path seen
                rows = list(app.calls.rows.values()) if app.calls else []
                eager = [r for r in rows if not r.compiled]
                return len(eager) == 2 and len(rows) > 2 and all(r.time_us is not None for r in eager) \
                    and bool(app.calls.uninspected)

            if not await wait_until(timed, 240):
                print("warning: the two models' calls, the compiled one and the fast path were not all seen within "
                      "240 s", file=sys.stderr)
            for width, height in WIDTHS:
                await pilot.resize_terminal(width, height)
                await pilot.pause(1.5)
                saved.append(Path(app.save_screenshot(f"watch-calls-{width}x{height}-{tag}.svg", str(out))))
            await pilot.press("q")
    return saved


async def shoot_gradients(device: str, out: Path, tag: str, size: tuple[int, int]) -> Path:
    log_path = str(Path(tempfile.mkdtemp(prefix="sdpa-tui-watch-shots-")) / "grad_nan.log")
    python = shutil.which("python3")
    python = "python3" if python and os.path.samefile(python, sys.executable) else sys.executable
    watched = WatchedProgram([python, "tests/watch_programs/grad_nan_repro.py", "704", "40", device])
    with open(log_path, "ab", buffering=0) as log:
        watched.log_to(log)
        app = make_watch_app(watched, log_path, device)
        async with app.run_test(size=size) as pilot:
            def flagged() -> bool:
                rows = list(app.calls.rows.values()) if app.calls else []
                return app.exit_code is not None and any(r.check and r.check.failed for r in rows)

            if not await wait_until(flagged, 180):
                print("warning: no flagged call after the program exited within 180 s", file=sys.stderr)
            await pilot.pause(1.0)
            path = Path(app.save_screenshot(f"watch-gradients-{tag}.svg", str(out)))
            await pilot.press("q")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    parser.add_argument("--tag", default="gpu")
    parser.add_argument("--size", default="140x45", help="terminal size, WxH (default 140x45)")
    parser.add_argument("--only", choices=("compiled", "widths", "gradients"), help="take only these screenshots")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    width, height = (int(x) for x in args.size.split("x"))
    if args.only == "widths":
        for path in asyncio.run(shoot_widths(args.device, args.out, args.tag)):
            print(path)
        return 0
    if args.only == "gradients":
        print(asyncio.run(shoot_gradients(args.device, args.out, args.tag, WIDTHS[1])))
        return 0
    if args.only == "compiled":
        print(asyncio.run(shoot_compiled(args.device, args.out, args.tag, ADVICE_SIZE)))
        return 0
    for path in asyncio.run(shoot(args.device, args.out, args.tag, (width, height))):
        print(path)
    print(asyncio.run(shoot_advice(args.device, args.out, args.tag, ADVICE_SIZE)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
