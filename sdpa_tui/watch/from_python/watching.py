"""``with watch() as w:``: this process's SDPA calls watched by ``sdpa-tui watch``'s own probe, for the block.

Entering installs the probe (``watch/probe/install.py``) with a socket of the block's own (the command's channel,
``watch/states/state_socket.py``): the process sends its states there, and so does every Python process it starts
meanwhile (forked DataLoader workers and ``multiprocessing`` children on their own connections, as under the
command; spawned ones and subprocesses through the start-up hook, put on ``PYTHONPATH`` for the block). Leaving
finishes the probe (the last profiler window stopped and read, its thread stopped), puts back everything it rebound
in torch and the environment, and keeps the report (``w.report``).

A block inside another block, or in a program that ``sdpa-tui watch`` runs, installs nothing: it shares the watch
in force, and its report is that watch's calls so far when it ends (the outer block's, or this process's).
``publish``: also send the states to ``sdpa-tui watch --attach ADDRESS`` (a socket's path or ``HOST:PORT``;
``SDPA_TUI_PUBLISH`` names it where ``publish`` is not given).
"""

from __future__ import annotations

import os
import time
from types import TracebackType

from ...core.calls.watched_calls import ProcessState
from ...core.installation import IMPORT_ROOT
from ..probe.explain import origin
from ..probe.install import format_exception, install, installed, uninstall
from ..probe.slow_path import Probe
from ..states.collected_states import CollectedStates
from ..states.state_socket import HOOK_DIR, PUBLISH_ENV, SOCKET_ENV, StatePublisher, StateSender
from .calls_report import CallsReport

DRAIN_S = 1.0
"""At the block's end, how long the states of processes it started (still sending) are waited for."""

_blocks: list[Watch] = []  # the blocks in force that installed the probe (one at most: an inner one shares it)


class Watch:
    """A ``with`` block's watch; see the module's doc. ``name``: the report's program (default ``watch() at
    FILE:LINE``, where the block is); ``kernel_windows``: profiler windows on CUDA for the calls' kernels and
    kernel times (as the command; off, only counts, host times on the CPU and checks)."""

    def __init__(self, publish: str | None = None, name: str | None = None, kernel_windows: bool = True) -> None:
        self.publish = publish if publish is not None else os.environ.get(PUBLISH_ENV) or None
        self.name = name
        self.kernel_windows = kernel_windows
        self.shared = False  # an inner block (or one inside the command's program): installs nothing
        self._probe: Probe | None = None
        self._collected: CollectedStates | None = None
        self._publisher: StatePublisher | None = None
        self._saved_env: dict[str, str | None] = {}
        self._started: float | None = None
        self._ended: float | None = None
        self._error = ""
        self._report: CallsReport | None = None

    # -- the block ---------------------------------------------------------------------------------------------
    def __enter__(self) -> Watch:
        if self._started is not None:
            raise RuntimeError("a watch() runs one block: call watch() again for another")
        self.name = self.name or f"watch() at {origin.call_site(origin.caller_frame(1))}"
        self._started = time.monotonic()
        probe = installed()
        if probe is not None:
            self.shared, self._probe = True, probe
            return self
        self._publisher = StatePublisher(self.publish) if self.publish else None
        self._collected = CollectedStates(lambda: [os.getpid()],
                                          self._publisher.publish if self._publisher else None)
        path = self._collected.listen().path
        self._set_env(SOCKET_ENV, path)
        self._set_env("PYTHONPATH", os.pathsep.join(
            p for p in (HOOK_DIR, IMPORT_ROOT, os.environ.get("PYTHONPATH", "")) if p))
        self._probe = install(StateSender(path), self.kernel_windows)
        _blocks.append(self)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._ended = time.monotonic()
        if exc is not None and not isinstance(exc, (SystemExit, GeneratorExit)):
            self._error = format_exception(exc)
        if self.shared:
            self._report = _blocks[-1].report if _blocks else self._snapshot()
            return
        probe, collected = self._probe, self._collected
        assert probe is not None and collected is not None
        try:
            probe.finish(self._error)  # the last window stopped and read, the thread stopped, the final state sent
            own = probe.state(final=True)
            if probe.sender is not None:
                probe.sender.close()
            assert collected.listener is not None
            collected.listener.drain(DRAIN_S)
            collected.note(own)  # the last word on this process (and what the publisher sends last)
            self._report = self._snapshot()
        finally:
            uninstall(probe)
            self._restore_env()
            collected.close()
            _blocks.remove(self)
            if self._publisher is not None:
                self._publisher.close()

    # -- the report ----------------------------------------------------------------------------------------------
    @property
    def report(self) -> CallsReport:
        """The calls so far (inside the block), or as the block left them."""
        if self._report is not None:
            return self._report
        if self._started is None:
            raise RuntimeError("no calls yet: use the watch in a with block first")
        if self.shared and _blocks:
            return _blocks[-1].report
        return self._snapshot()

    def _snapshot(self) -> CallsReport:
        """The report now: this process's state read from its probe, its children's as they last sent them."""
        assert self._probe is not None and self._started is not None
        ended = self._ended is not None
        exit_code = (1 if self._error else 0) if ended else None
        duration = (self._ended or time.monotonic()) - self._started
        own = self._probe.state(final=ended)
        if self._collected is None:  # shared with the command's probe: this process's calls
            report = CollectedStates().report([self.name or ""], exit_code, duration, "the block started",
                                              states=[own])
        else:
            states: list[ProcessState] = [s for s in self._collected.states() if s.pid != own.pid]
            report = self._collected.report([self.name or ""], exit_code, duration, "the block started",
                                            states=[own, *states])
        report.error = report.error or self._error
        return CallsReport(report)

    # -- the environment the block's children start with -----------------------------------------------------------
    def _set_env(self, name: str, value: str) -> None:
        self._saved_env.setdefault(name, os.environ.get(name))
        os.environ[name] = value

    def _restore_env(self) -> None:
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_env.clear()


def watch(publish: str | None = None, name: str | None = None, kernel_windows: bool = True) -> Watch:
    """``with watch() as w: ...`` then ``w.report``: see :class:`Watch`."""
    return Watch(publish, name, kernel_windows)


__all__ = ["Watch", "watch"]
