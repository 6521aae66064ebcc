"""Which calls the watched program made while the host was busy beyond it (``telemetry/host_busy.py``): their times
read high. Kept on the parent side as each process's state arrives: the calls a signature gained since that
process's last state were made in the interval just read."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from ...core.calls.call_signature import CallSignature
from ...core.calls.watched_calls import ProcessState
from ...telemetry.host_busy import BusyReading, HostBusy

READ_EVERY_S = 0.5
"""The host is read at most this often (each process sends its state twice a second)."""


class ContendedCalls:
    def __init__(self, host: HostBusy | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.host = host or HostBusy()
        self.clock = clock
        self.reading: BusyReading | None = None
        self.seen = ""  # the busiest interval of the run, in words ("" while none was busy)
        self._worst = 0.0
        self._read_at: float | None = None
        self._counts: dict[tuple[int, CallSignature, bool], tuple[int, int]] = {}  # → (calls seen, made while busy)

    @property
    def now(self) -> str:
        """The latest interval, in a few words, where it was busy."""
        return self.reading.short() if self.reading else ""

    def note(self, state: ProcessState, program_pids: Iterable[int]) -> None:
        """Count ``state``'s new calls against the latest reading and write each call's ``contended_calls``."""
        now = self.clock()
        if self._read_at is None or now - self._read_at >= READ_EVERY_S:
            self._read_at = now
            self.reading = self.host.read(program_pids)
            if self.reading is not None and self.reading.busy and self.reading.waited_pct > self._worst:
                self._worst, self.seen = self.reading.waited_pct, self.reading.note()
        busy = self.reading is not None and self.reading.busy
        for call in state.calls:
            key = (state.pid, call.signature, call.compiled)
            seen, contended = self._counts.get(key, (0, 0))
            contended += max(0, call.count - seen) if busy else 0
            self._counts[key] = (max(seen, call.count), contended)
            call.contended_calls = contended
