"""The live monitor's engine, started by the command line before the UI is imported: the engine imports torch for
seconds, and importing Textual and building the app took the first 0.9-1.6 s of every start (the engine was spawned
only then). What the engine says before the app exists is kept by a :class:`Relay` and handed on, in order, once
the app connects. Torch-free and Textual-free, as the rest of the engine's host side."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from multiprocessing import resource_tracker
from typing import Any

from .supervisor import EngineSupervisor


class Relay:
    """What an engine says, kept until :meth:`connect`, then passed on as it comes (both from the engine's reader
    thread; the kept ones first, under one lock, so nothing overtakes them)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: list[tuple[bool, Any]] = []  # (is_event, what)
        self._on_records: Callable[[list[Any]], None] | None = None
        self._on_event: Callable[[Any], None] | None = None

    def records(self, records: list[Any]) -> None:
        with self._lock:
            if self._on_records is None:
                self._kept.append((False, records))
            else:
                self._on_records(records)

    def event(self, event: Any) -> None:
        with self._lock:
            if self._on_event is None:
                self._kept.append((True, event))
            else:
                self._on_event(event)

    def connect(self, on_records: Callable[[list[Any]], None], on_event: Callable[[Any], None]) -> None:
        with self._lock:
            for is_event, what in self._kept:
                (on_event if is_event else on_records)(what)
            self._kept.clear()
            self._on_records, self._on_event = on_records, on_event


SERVED_DRIVER = "textual.drivers.web_driver:WebDriver"
"""The ``TEXTUAL_DRIVER`` textual-serve sets for the app process of each browser session."""


def served_by_textual_serve() -> bool:
    """Whether this process is a browser session started by ``sdpa-tui serve`` (no TTY, by design)."""
    return os.environ.get("TEXTUAL_DRIVER") == SERVED_DRIVER


def can_run_live() -> bool:
    """Whether a live monitor can run here: a terminal on stdin and stdout, or a browser session of ``serve``."""
    return (sys.stdin.isatty() and sys.stdout.isatty()) or served_by_textual_serve()


STDIO = (0, 1, 2)


def start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker, which spawning an engine needs, before the UI runs: it passes on
    sys.stderr's descriptor, and a running Textual app replaces sys.stderr with an object that has none.

    The tracker inherits this process's stdin, stdout and stderr and outlives it by a moment (it exits once every
    process that uses it has). In a browser session those are textual-serve's pipes to the server, which sees the
    session end only when the last holder closes them: a server stopped in that moment closed its event loop with
    the session's pipes still open, and printed a traceback as they were collected. A served session's tracker
    gets /dev/null for all three instead (so a served session loses its warnings of leaked semaphores)."""
    if not served_by_textual_serve():
        resource_tracker.ensure_running()
        return
    null = os.open(os.devnull, os.O_RDWR)
    kept = [os.dup(fd) for fd in STDIO]
    try:
        for fd in STDIO:
            os.dup2(null, fd)
        resource_tracker.ensure_running()
    finally:
        for fd, copy in zip(STDIO, kept):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(null)


def start_engine_early(device: str) -> tuple[EngineSupervisor, Relay]:
    """The engine for ``device``, started now (its process imports torch while the UI starts)."""
    start_resource_tracker()
    relay = Relay()
    engine = EngineSupervisor(device, on_records=relay.records, on_event=relay.event)
    engine.start()
    return engine, relay
