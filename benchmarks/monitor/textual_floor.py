"""The floor under the first frame: how soon a minimal Textual app (one Static, one Footer) shows its first frame on
this machine, in a real terminal (tmux), against the same time for ``sdpa-tui`` through ``ui_phases.py``.

Each run starts a fresh interpreter in a tmux pane; the app marks Textual's ``Ready`` ("the first frame has been
displayed") on CLOCK_MONOTONIC, and the time is counted from just before tmux was asked to start the command, as
``ui_live.py`` counts its first frame. Prints a table and writes JSON.

    python3 benchmarks/monitor/textual_floor.py --runs 5
    python3 benchmarks/monitor/textual_floor.py --runs 5 --device cuda      # and sdpa-tui's own, alternated
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from recorded import command_line  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
UI_PHASES = Path(__file__).resolve().with_name("ui_phases.py")
SOCKET = f"sdpa-tui-floor-{os.getpid()}"
APP = """
import time, json, sys
from textual.app import App
from textual.widgets import Footer, Static

class Floor(App):
    def compose(self):
        yield Static("first frame")
        yield Footer()

    def on_ready(self):
        open(sys.argv[1], "w").write(json.dumps({"marks": {"first_frame": time.monotonic()}}))
        self.exit()

Floor().run()
"""


def run_once(command: str, marks_file: Path, timeout: float = 30.0) -> float | None:
    """Seconds from the command's start to its first frame (the marks file's ``first_frame``), or None."""
    marks_file.unlink(missing_ok=True)
    start = time.monotonic()
    subprocess.run(["tmux", "-L", SOCKET, "new-session", "-d", "-s", "floor", "-x", "120", "-y", "40", "-c",
                    str(REPO), command], check=True)
    try:
        while time.monotonic() - start < timeout:
            try:
                return json.loads(marks_file.read_text())["marks"]["first_frame"] - start
            except (OSError, ValueError, KeyError):
                time.sleep(0.01)
        return None
    finally:
        subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)
        time.sleep(1.0)  # the killed app's engine exits (its parent gone) before the next run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--device", default=None, help="also time sdpa-tui on this device (ui_phases.py's first "
                        "frame), alternated with the minimal app")
    parser.add_argument("--json", default="benchmarks/results/textual-floor.json")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sdpa-tui-floor-"))
    app = tmp / "floor_app.py"
    app.write_text(APP)
    marks = tmp / "marks.json"
    python = shlex.quote(sys.executable)
    commands = {"minimal Textual app": f"exec {python} {shlex.quote(str(app))} {shlex.quote(str(marks))}"}
    if args.device:
        path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)  # and Textual's, if set
        commands["sdpa-tui"] = (f"exec env PYTHONPATH={shlex.quote(path)} SDPA_TUI_UI_PHASES={shlex.quote(str(marks))} "
                                f"{python} {shlex.quote(str(UI_PHASES))} --device {args.device}")
    times: dict[str, list[float | None]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, command in commands.items():
            times[name].append(run_once(command, marks))
    print(f"{'app':<22}{'median':>9}  runs (s from the command to Textual's Ready)")
    for name, values in times.items():
        got = [v for v in values if v is not None]
        shown = ", ".join("timeout" if v is None else f"{v:.2f}" for v in values)
        print(f"{name:<22}{median(got) if got else float('nan'):>8.2f}s  {shown}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"command": command_line(), "cpus": os.cpu_count(), "load_average": os.getloadavg(),
                               "first_frame_s": times}, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
