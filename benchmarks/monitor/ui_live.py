"""Time to first frame, to the first number, to full panels, and the UI process's CPU use while live.

Runs the real ``sdpa-tui`` in a real terminal (tmux), as a user would, and reads the UI
process's CPU time from /proc (the engine is a separate process and is not counted).

- first number: any clock of any backend shows a value (issue 12: within 3 s of the first frame);
- first GPU/call: a backend's panel shows a ``GPU/call`` value (issue 39: within torch's own import + 1 s, that
  import being the engine's ``import_torch`` phase of the same run; printed with the margin, the first GPU/call
  less the end of the engine's import on the command's time line: its spawn, interpreter and import);
- kernels named: the engine sent every running backend's kernels (its ``all_graph_kernels`` phase: named from
  the CUDA graph's nodes where ``cuda-bindings`` imports; else ``all_kernel_captures``, the profiler's first
  bursts), on the command's time line. From the engine's clock, not read off the screen: a panel at 120x40 may
  cut its launch line;
- full panels: the dispatch panel names SDPA's pick, no backend is still waiting, and every
  running backend shows a kernel-clock value too (a profiler burst has been read; within 5 s).

    python3 benchmarks/monitor/ui_live.py --device cuda --seconds 30
    python3 benchmarks/monitor/ui_live.py --device cpu --seconds 30

Prints a table and writes JSON under benchmarks/results/, with the engine's start-up phases
(``StartupTimes``, written by the engine through ``SDPA_TUI_STARTUP_TIMES``) placed on the same
time line: seconds from the start of the command to the end of each phase.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from recorded import command_line, load_average  # noqa: E402

SESSION = "sdpa-tui-bench"
SOCKET = f"sdpa-tui-bench-{os.getpid()}"
"""A tmux server of our own: other runs on the machine neither see nor kill this session."""
REPO = Path(__file__).resolve().parents[2]
CONSOLE_SCRIPT = Path(__file__).resolve().with_name("console_script.py")
UI_PHASES = CONSOLE_SCRIPT.with_name("ui_phases.py")
FIRST_FRAME = re.compile(r"sdpa-tui")
NUMBER = r"\s+[\d.,]+ (µs|ms)"
FIRST_SAMPLE = re.compile(rf"(eager|GPU/call|GPU){NUMBER}")
FIRST_GPU_CALL = re.compile(rf"GPU/call{NUMBER}")
KERNEL_NUMBER = re.compile(rf"kernel{NUMBER}")
RUNNING = re.compile(r"● on ok")


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", SOCKET, *args], check=True, capture_output=True, text=True).stdout


def screen() -> str:
    return tmux("capture-pane", "-p", "-t", SESSION)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime of this process only


def full_panels(text: str) -> bool:
    running = len(RUNNING.findall(text))
    return ("SDPA picks" in text and "● on waiting" not in text and running > 0
            and len(KERNEL_NUMBER.findall(text)) >= running)


def wait_for(done, start: float, timeout: float) -> float | None:
    """Seconds from ``start`` until ``done(screen text)`` holds, or None at the timeout."""
    while time.monotonic() - start < timeout:
        if done(screen()):
            return time.monotonic() - start
        time.sleep(0.02)
    return None


def engine_phases(path: Path, start: float) -> dict | None:
    """The engine's StartupTimes as it wrote them, with its spawn and each phase's end in seconds
    from ``start`` (CLOCK_MONOTONIC is one clock for every process of the host)."""
    try:
        body = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    spawned = body["spawned_at"] - start
    return {"complete": body["complete"], "engine_spawned_s": spawned,
            "phases_end_s": {name: spawned + s for name, s in body["phases"].items()},
            "phases_took_s": dict(zip(body["phases"], (b - a for a, b in zip([0.0, *body["phases"].values()],
                                                                            body["phases"].values()))))}


def gpu_call_margin(phases: dict | None, first_gpu_call: float | None) -> dict | None:
    """The first GPU/call on screen against torch's import in the same run (the engine's ``import_torch`` phase):
    ``after_import_s`` is the first GPU/call less the end of that import on the command's time line (the engine's
    spawn, its interpreter and the import), ``against_goal_s`` the first GPU/call less the import's own time and 1 s
    (issue 39's goal: met at 0 or below). None without both."""
    if phases is None or first_gpu_call is None or "import_torch" not in phases["phases_end_s"]:
        return None
    ends, took = phases["phases_end_s"], phases["phases_took_s"]
    return {"import_torch_s": took["import_torch"], "import_ends_s": ends["import_torch"],
            "after_import_s": first_gpu_call - ends["import_torch"],
            "against_goal_s": first_gpu_call - took["import_torch"] - 1.0,
            "engine_first_gpu_call_s": ends.get("first_gpu_call"), "pick_kernels_named_s": ends.get("graph_kernels")}


def read_ui_phases(path: Path, start: float) -> dict[str, float] | None:
    """benchmarks/monitor/ui_phases.py's marks (CLOCK_MONOTONIC, as ``start``), as seconds from the command's start."""
    try:
        marks = json.loads(path.read_text())["marks"]
    except (OSError, ValueError, KeyError):
        return None
    return {name: round(t - start, 3) for name, t in marks.items()}


def print_phases(phases: dict | None, first_frame: float | None) -> None:
    if phases is None:
        print("engine start-up phases: none written (an engine without StartupTimes?)")
        return
    print(f"engine start-up phases (s from the command; first frame {first_frame if first_frame is None else round(first_frame, 2)}):")
    print(f"  {'engine spawned':<22}{phases['engine_spawned_s']:>8.2f}")
    for name, end in phases["phases_end_s"].items():
        print(f"  {name:<22}{end:>8.2f}  (+{phases['phases_took_s'][name]:.2f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long to measure CPU use while live")
    parser.add_argument("--command", default=f"{shlex.quote(sys.executable)} {shlex.quote(str(CONSOLE_SCRIPT))}",
                        help="the monitor's command (default: pip's sdpa-tui script, "
                        "benchmarks/monitor/console_script.py, run by this Python)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--ui-phases", action="store_true",
                        help="run the command through benchmarks/monitor/ui_phases.py and place the UI process's "
                        "start-up phases (up to the first frame) on the time line")
    parser.add_argument("--pythonpath", default=str(REPO),
                        help="where sdpa_tui is imported from (default: this checkout)")
    args = parser.parse_args()
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (args.pythonpath, os.environ.get("PYTHONPATH")) if p)
    startup_file = Path(tempfile.mkdtemp(prefix="sdpa-tui-startup-")) / "startup.json"
    ui_file = startup_file.with_name("ui-phases.json")
    command = (f"env SDPA_TUI_UI_PHASES={shlex.quote(str(ui_file))} {shlex.quote(sys.executable)} "
               f"{shlex.quote(str(UI_PHASES))}" if args.ui_phases else args.command)
    start = time.monotonic()
    # started in --pythonpath: ``python -m`` puts the working directory first on sys.path, before PYTHONPATH (a script
    # puts its own folder first, and sdpa_tui comes from PYTHONPATH)
    tmux("new-session", "-d", "-s", SESSION, "-x", "120", "-y", "40", "-c", args.pythonpath,
         f"exec env SDPA_TUI_STARTUP_TIMES={shlex.quote(str(startup_file))} {command} --device {args.device}")
    pid = int(tmux("list-panes", "-t", SESSION, "-F", "#{pane_pid}").split()[0])
    first_frame = wait_for(FIRST_FRAME.search, start, 30)
    first_sample = wait_for(FIRST_SAMPLE.search, start, 120)
    first_gpu_call = wait_for(FIRST_GPU_CALL.search, start, 120) if args.device != "cpu" else None
    full = wait_for(full_panels, start, 120)
    time.sleep(2.0)  # let start-up work settle before measuring steady state
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(args.seconds)
    cpu1, t1 = cpu_seconds(pid), time.monotonic()
    final_screen = screen()
    tmux("send-keys", "-t", SESSION, "q")
    exited = False
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            exited = True
            break
        time.sleep(0.1)
    leftover = subprocess.run(["pgrep", "-f", "sdpa-tui-engine|sdpa_tui.engine"], capture_output=True, text=True).stdout.split()
    subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)
    phases = engine_phases(startup_file, start)
    ui_phases = read_ui_phases(ui_file, start) if args.ui_phases else None
    ends = phases["phases_end_s"] if phases else {}
    named = ends.get("all_graph_kernels", ends.get("all_kernel_captures")) if args.device != "cpu" else None
    gpu_call = gpu_call_margin(phases, first_gpu_call)
    result = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "host": platform.node(),
        "device": args.device,
        "first_frame_s": first_frame,
        "first_sample_s": first_sample,
        "kernels_named_s": named,
        "first_gpu_call_s": first_gpu_call,
        "first_gpu_call": gpu_call,
        "full_panels_s": full,
        "first_number_after_first_frame_s": None if None in (first_frame, first_sample) else first_sample - first_frame,
        "full_panels_after_first_frame_s": None if None in (first_frame, full) else full - first_frame,
        "command": command_line(),
        "load_average": load_average(),
        "ui_cpu_percent_of_one_core": 100.0 * (cpu1 - cpu0) / (t1 - t0),
        "measured_s": t1 - t0,
        "exited_on_q": exited,
        "engine_processes_left": len(leftover),
        "engine_startup": phases,
        "ui_startup": ui_phases,
        "screen": final_screen,
    }
    print(f"{'device':<10}{'first frame':>14}{'first number':>14}{'kernels named':>15}{'full panels':>14}"
          f"{'UI CPU %':>10}{'exit on q':>11}")
    fmt = lambda v: "timeout" if v is None else f"{v:.2f} s"  # noqa: E731
    print(f"{args.device:<10}{fmt(first_frame):>14}{fmt(first_sample):>14}{fmt(named) if named else '—':>15}"
          f"{fmt(full):>14}"
          f"{result['ui_cpu_percent_of_one_core']:>9.1f}%{str(exited):>11}")
    print("(seconds from the start of the command; the first number and full panels are counted from the first "
          f"frame in the JSON; load average {result['load_average']})")
    print_phases(phases, first_frame)
    if gpu_call:
        pick_named = gpu_call["pick_kernels_named_s"]
        print(f"first GPU/call on screen {fmt(first_gpu_call)}; the engine's import of torch took "
              f"{gpu_call['import_torch_s']:.2f} s, ending at {gpu_call['import_ends_s']:.2f} s; "
              f"first GPU/call - (spawn + import) = {gpu_call['after_import_s']:+.2f} s; against torch's import + 1 s: "
              f"{gpu_call['against_goal_s']:+.2f} s ({'met' if gpu_call['against_goal_s'] <= 0 else 'not met'}); "
              f"the pick's kernels named {'— (no graph_kernels phase)' if pick_named is None else fmt(pick_named)}")
    elif args.device != "cpu":
        print(f"first GPU/call on screen: {fmt(first_gpu_call)}")
    if args.ui_phases:
        print("UI process start-up phases (s from the command; ui_phases.py): " + (", ".join(
            f"{name} {end:.2f}" for name, end in ui_phases.items()) if ui_phases else "none written"))
    out = Path(args.json or f"benchmarks/results/ui-live-{args.device.replace(':', '')}-{dt.date.today()}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
