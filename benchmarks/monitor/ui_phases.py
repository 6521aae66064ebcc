"""The UI process's start-up phases up to the first frame, for ``benchmarks/monitor/ui_live.py --ui-phases``.

Runs the live command as ``python3 -m sdpa_tui`` would (``sdpa_tui.cli.main`` with the same arguments, in the same
order: the engine spawned before Textual is imported) and writes, to the file named by ``SDPA_TUI_UI_PHASES``, the
CLOCK_MONOTONIC time at which each phase ended (system-wide on Linux, so ``ui_live.py`` places them on the command's
time line). The marks are read by wrapping the functions the command calls; nothing else changes.

    interpreter      this script's first line ran (the interpreter and its site imports before it)
    cli_imported     ``sdpa_tui.cli`` (the argument parser and what it imports)
    engine_spawned   ``start_engine_early`` returned (the device checked, NVML counted, the engine process started)
    ui_imported      ``sdpa_tui.commands.monitor`` imported (Textual and the app)
    app_running      ``run_app`` called (the arguments read back, the app about to be built and run)
    first_frame      Textual's ``Ready``: "the DOM is ready and the first frame has been displayed"
"""

from __future__ import annotations

import time

MARKS: dict[str, float] = {"interpreter": time.monotonic()}

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ENV = "SDPA_TUI_UI_PHASES"


def mark(name: str) -> None:
    MARKS.setdefault(name, time.monotonic())


def write() -> None:
    path = os.environ.get(ENV)
    if path:
        Path(path).write_text(json.dumps({"clock": "CLOCK_MONOTONIC", "marks": MARKS}) + "\n")


def watch_for_first_frame() -> None:
    from textual.app import App

    original = App.post_message

    def post_message(self: Any, message: Any) -> bool:
        if type(message).__name__ == "Ready":
            mark("first_frame")
            write()
            App.post_message = original  # type: ignore[method-assign]
        return original(self, message)

    App.post_message = post_message  # type: ignore[method-assign]


def wrap_launch() -> None:
    """After the engine's spawn, as the command does: import the UI, and mark when ``run_app`` is called."""
    mark("engine_spawned")
    from sdpa_tui.commands import monitor

    mark("ui_imported")
    run_app = monitor.run_app

    def marked_run_app(*args: Any, **kwargs: Any) -> int:
        mark("app_running")
        watch_for_first_frame()
        return run_app(*args, **kwargs)

    monitor.run_app = marked_run_app  # type: ignore[assignment]


def main() -> int:
    from sdpa_tui import cli
    from sdpa_tui.engine.host import early_start

    mark("cli_imported")
    start_engine_early = early_start.start_engine_early

    def marked_start(device: str) -> Any:
        started = start_engine_early(device)
        wrap_launch()
        return started

    early_start.start_engine_early = marked_start  # type: ignore[assignment]
    try:
        return cli.main(sys.argv[1:])
    finally:
        write()


if __name__ == "__main__":
    sys.exit(main())
