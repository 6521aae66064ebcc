"""exit_on_signals: SIGHUP, SIGTERM and SIGINT end the live app the orderly way (engine
stopped, terminal restored, exit status 128 + signal number), with a last-resort timer that
kills the engine and ends the process if that orderly exit hangs (``FORCE_EXIT_AFTER_S``)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from typing import Protocol

from ...core.protocol.engine_handle import EngineHandle
from .guarded_driver import ExitRequester

EXIT_SIGNALS = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)
"""Signals that end the app the orderly way (engine stopped, terminal restored)."""
FORCE_EXIT_AFTER_S = 20.0
"""After an exit signal, the longest the orderly exit may take before the process kills the
engine and ends itself (a stuck exit must not leave the engine holding the GPU)."""


class SignalledApp(ExitRequester, Protocol):
    """What the signals need of the app (:class:`~sdpa_tui.ui.live_app.LiveApp`): a way to ask it to exit, and
    its engine to kill when that exit hangs."""

    engine: EngineHandle


@contextlib.contextmanager
def exit_on_signals(app: SignalledApp, signals: tuple[signal.Signals, ...] = EXIT_SIGNALS,
                    force_after_s: float = FORCE_EXIT_AFTER_S) -> Iterator[None]:
    """While the app runs, SIGHUP/SIGTERM/SIGINT make it exit the orderly way (engine
    stopped, terminal restored, exit status 128 + signal number). Call from the main thread.

    The handler only schedules ``app.exit`` on the app's event loop (Python runs signal
    handlers in the main thread, the one running that loop) and starts a daemon timer: if
    the process is still there ``force_after_s`` later, the timer kills the engine and ends
    the process, so a stuck shutdown cannot leave an engine holding the GPU.
    """
    force: list[threading.Timer] = []

    def handler(signum: int, frame: object) -> None:
        app.request_exit(128 + signum, f"{signal.Signals(signum).name} received")
        if not force:
            timer = threading.Timer(force_after_s, _force_exit, args=(app, 128 + signum))
            timer.daemon = True
            timer.name = "sdpa-tui-force-exit"
            force.append(timer)
            timer.start()

    previous = {sig: signal.signal(sig, handler) for sig in signals}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
        # an armed timer stays armed: it also covers a hang after the app has returned


def _force_exit(app: SignalledApp, code: int) -> None:
    try:
        app.engine.kill_engine()
    finally:
        os._exit(code)
