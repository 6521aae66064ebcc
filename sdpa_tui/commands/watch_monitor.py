"""``sdpa-tui watch -- python x.py``: the live monitor with the program's Calls view.

The program's stdout and stderr go to a log file (named in the view and on exit; the newest ``KEEP_LOGS``
are kept in ``~/.cache/sdpa-tui/watch``), its stdin is /dev/null: the terminal belongs to the UI. Quitting (q, ctrl+c, a signal, the terminal
going away) stops the program's process group and the lab's engine.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time

from ..core.backends import ALL_BACKENDS
from ..core.workload import Workload
from ..engine.host.early_start import can_run_live
from ..ui.terminal.exit_signals import exit_on_signals
from ..ui.watch.watch_app import WatchApp
from .monitor import make_app

KEEP_LOGS = 10
"""The watched programs' output logs kept: the newest, in ``log_dir()``; older ones are removed at the next start."""


def log_dir() -> str:
    """``$XDG_CACHE_HOME/sdpa-tui/watch`` (``~/.cache/…``), or the temporary folder where that cannot be made."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "sdpa-tui", "watch")
    try:
        os.makedirs(path, exist_ok=True)
        return path
    except OSError:
        return tempfile.gettempdir()


def log_file_path(directory: str | None = None) -> str:
    """A new log's path; the oldest logs beyond ``KEEP_LOGS`` are removed (each run used to leave one in /tmp)."""
    directory = directory or log_dir()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        logs = sorted((e for e in os.scandir(directory) if e.name.startswith("sdpa-tui-watch-") and e.name.endswith(".log")),
                      key=lambda e: e.stat().st_mtime)
        for old in logs[: max(0, len(logs) - (KEEP_LOGS - 1))]:
            os.unlink(old.path)
    except OSError:
        pass
    return os.path.join(directory, f"sdpa-tui-watch-{stamp}-{os.getpid()}.log")


def make_watch_app(watched, log_path: str, device: str = "auto") -> WatchApp:
    app = make_app(Workload(), ALL_BACKENDS, device, app_class=WatchApp)
    app.watch_program(watched, log_path)
    return app


def run_watch_app(watched, advisor=None) -> int:
    """The program's exit code when it ended by itself; 0 when the user stopped it; 128+N on signal N."""
    if not can_run_live():
        print("sdpa-tui watch: no terminal here (stdin/stdout is not a TTY); use: sdpa-tui watch --report calls.json -- ...",
              file=sys.stderr)
        return 2
    log_path = log_file_path()
    with open(log_path, "ab", buffering=0) as log:
        watched.log_to(log)
        app = make_watch_app(watched, log_path)
        app.advisor = advisor  # ``b`` in the Calls view, once the program has exited
        app.watch_terminal = True
        try:
            with exit_on_signals(app):
                app.run()
        finally:
            app.stop_program()  # also when the app failed to start or did not unmount
    with contextlib.suppress(OSError, ValueError):  # the terminal may be gone
        if app.exit_reason:
            print(f"sdpa-tui watch: {app.exit_reason}: program and engine stopped; its output: {log_path}", file=sys.stderr)
        elif app.stopped_by_ui:
            print(f"sdpa-tui watch: program stopped; its output: {log_path}", file=sys.stderr)
        else:
            print(f"sdpa-tui watch: program exited with code {app.exit_code}; its output: {log_path}", file=sys.stderr)
    if app.exit_reason:
        return app.return_code or 0
    if app.stopped_by_ui or app.exit_code is None:
        return 0
    return app.exit_code if app.exit_code >= 0 else 128 - app.exit_code
