"""LiveApp: :class:`SdpaApp` as ``sdpa-tui`` runs it, with ways out that always stop the engine.

The keys (``ctrl+c`` quits), :meth:`LiveApp.request_exit` (from a signal handler or any
thread) and the terminal guards: a poll of the terminal's descriptors for a hang-up, and a
driver (:func:`~.terminal.guarded_driver.guarded_linux_driver`) whose writes to a dead terminal are dropped instead of
killing Textual's writer thread. Signals are turned into exits by :mod:`.terminal.exit_signals`; how
the app is built and run, and the whole "leaving cleanly" picture, is in :mod:`sdpa_tui.commands.monitor`.
"""

from __future__ import annotations

import asyncio
import select
import sys
from typing import TYPE_CHECKING

from textual.binding import Binding

from .app import SdpaApp
from .terminal.guarded_driver import EXIT_TERMINAL_LOST, guarded_linux_driver

if TYPE_CHECKING:
    from ..exports.metrics.lab_metrics import LatestMetrics

METRICS_INTERVAL_S = 1.0
"""How often ``--metrics-port`` publishes the session to the metrics endpoint."""
TERMINAL_CHECK_S = 0.5


class LiveApp(SdpaApp):
    """:class:`SdpaApp` as ``sdpa-tui`` runs it, with ways out that always stop the engine.

    - ``ctrl+c`` quits (Textual's own binding only tells you to press ctrl+q);
    - :meth:`request_exit` quits from a signal handler or any thread, without blocking;
    - with ``watch_terminal`` (set by :func:`run_app`), a hung-up or closed terminal quits.
    """

    BINDINGS = [*SdpaApp.BINDINGS, Binding("ctrl+c", "quit", "Quit", show=False)]

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.watch_terminal = False
        self.metrics: LatestMetrics | None = None
        """Set for ``--metrics-port``: the collector the metrics endpoint serves."""
        self.exit_reason: str | None = None
        """Why the app was asked to exit from outside (a signal, the terminal), if it was."""
        self._exit_loop: asyncio.AbstractEventLoop | None = None
        self._pending_exit: int | None = None
        self._terminal_poll: select.poll | None = None

    def get_driver_class(self) -> type:
        driver = super().get_driver_class()
        guarded = guarded_linux_driver()
        return guarded if guarded is not None and driver is guarded.__base__ else driver

    def request_exit(self, return_code: int, reason: str) -> None:
        """Ask the app to exit; safe from a signal handler and from other threads."""
        if self.exit_reason is None:
            self.exit_reason = reason
        loop = self._exit_loop
        if loop is None:
            try:
                loop = asyncio.get_running_loop()  # a signal handler, in the app's own thread
            except RuntimeError:
                loop = None
        if loop is None or loop.is_closed():
            self._pending_exit = return_code  # not running yet: exit as soon as it loads
            return
        try:
            loop.call_soon_threadsafe(self._exit_now, return_code)
        except RuntimeError:  # the loop closed meanwhile: the app has already ended
            pass

    def _exit_now(self, return_code: int) -> None:
        if self.return_code is None:  # already exiting (q, an earlier signal): keep its code
            self.exit(return_code=return_code)

    def on_load(self) -> None:
        self._exit_loop = asyncio.get_running_loop()
        if self._pending_exit is not None:
            self.exit(return_code=self._pending_exit)

    def lab_started(self) -> None:
        super().lab_started()
        if self.metrics is not None:  # --metrics-port: publish from this thread, the one owning the session
            self.set_interval(METRICS_INTERVAL_S, lambda: self.metrics.publish(self.session, self.gpu))
        if self.watch_terminal:
            self._terminal_poll = _terminal_poll()
            self.set_interval(TERMINAL_CHECK_S, self._check_terminal)

    def _check_terminal(self) -> None:
        if self._terminal_poll is None:
            return
        try:
            gone = [fd for fd, flags in self._terminal_poll.poll(0)
                    if flags & (select.POLLHUP | select.POLLERR | select.POLLNVAL)]
        except OSError:
            gone = [-1]
        if gone:
            self._terminal_poll = None
            self.request_exit(EXIT_TERMINAL_LOST, "the terminal was closed (input hung up)")


def _terminal_poll() -> select.poll | None:
    """A poll object on the terminal's input and output descriptors: only hang-up and error
    conditions are asked for, so a pending key press does not count."""
    poll = select.poll()
    fds = set()
    for stream in (sys.__stdin__, sys.__stderr__):
        try:
            fds.add(stream.fileno())
        except (AttributeError, OSError, ValueError):
            pass
    for fd in fds:
        poll.register(fd, 0)  # POLLHUP, POLLERR and POLLNVAL are always reported
    return poll if fds else None
