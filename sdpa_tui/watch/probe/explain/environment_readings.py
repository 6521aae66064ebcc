"""The dispatch environment as a watched process found it at start (before the program's first line) and at its end,
where the program changed it (``core/dispatch_environment.py``, read by ``engine/measuring/dispatch_readings.py``)."""

from __future__ import annotations

from ....core.dispatch_environment import DispatchEnvironment
from ....engine.measuring import dispatch_readings


class EnvironmentReadings:
    def __init__(self) -> None:
        self.start: DispatchEnvironment | None = None
        self.end: DispatchEnvironment | None = None  # None: the same as at start

    def read(self, end: bool = False) -> None:
        try:
            found = dispatch_readings.read()
        except Exception:  # noqa: BLE001 - never the program's problem
            return
        if end:
            self.end = found if found != self.start else None
        else:
            self.start = found
