"""``sdpa-tui watch --attach ADDRESS``: the processes that watch themselves with the Python API and publish there
(``watch(publish=ADDRESS)``), shown as ``watch`` shows a program it runs.

The command listens at ``ADDRESS`` (a socket's path, or ``HOST:PORT``) and collects the states that arrive, as
from a program's probe (``watch/states/collected_states.py``); the attached block is "running" until every process
that sent a state has sent its last (the block ended), then "exited" with 0, or 1 where it raised. Its output stays
where it is: the log shows only that.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from ...core.calls.watched_calls import ProcessState
from ..states.collected_states import CollectedStates
from ..states.state_socket import DEFAULT_REPRO_DIR, StateListener, socket_address

if TYPE_CHECKING:
    from ...core.calls.watch_report import WatchReport

POLL_S = 0.1


class AttachedProcesses:
    """What ``watch``'s headless run and its live Calls view need of a program (``WatchApp``'s ``Program``), for
    processes it did not start. ``repro_dir``: where a flagged call was saved is the process's own choice."""

    def __init__(self, address: str) -> None:
        socket_address(address)  # ValueError: not an address
        self.address = address
        self.display = ["--attach", address]
        self.collected = CollectedStates()  # the processes that sent a state are those the contention is read beside
        self.listener: StateListener | None = None
        self.process = None
        self.repro_dir = DEFAULT_REPRO_DIR
        self.started = time.monotonic()
        self.ended: float | None = None
        self.interrupted = False
        self._stopped = threading.Event()

    def unopenable_script(self) -> str | None:
        return None

    def log_to(self, log) -> None:  # noqa: ANN001 - a file open for bytes
        log.write(f"attached to {self.address}\n(the process's output stays where it runs)\n".encode())

    def start(self) -> None:
        """Listen at the address (once): OSError where it is taken."""
        if self.listener is None:
            self.listener = self.collected.listen(self.address)

    def states(self) -> list[ProcessState]:
        return self.collected.states()

    def poll(self) -> int | None:
        """None while a published block runs (or none has come yet); then 1 where it raised, else 0."""
        if self.ended is None and self.collected.all_final():
            self.ended = time.monotonic()
        if self.ended is None:
            return None
        return 1 if any(s.error for s in self.states()) else 0

    def wait(self) -> int:
        """Until the attached blocks have ended (Ctrl+C: stop waiting, as the processes go on)."""
        try:
            while self.poll() is None and not self._stopped.wait(POLL_S):
                pass
        except KeyboardInterrupt:
            self.interrupted = True
        code = self.poll()
        return 0 if code is None else code

    def stop(self) -> int:
        self._stopped.set()
        return 0

    def close(self) -> None:
        self._stopped.set()
        self.collected.close()

    def elapsed_s(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def report(self, exit_code: int | None) -> WatchReport:
        return self.collected.report(self.display, exit_code, self.elapsed_s(), "the block started",
                                     ["stopped waiting by Ctrl+C: the attached processes go on"] if self.interrupted
                                     else [])
