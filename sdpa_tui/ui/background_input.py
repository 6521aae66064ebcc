"""The app's handlers for what background threads post: engine records, engine events, GPU readings.

:class:`BackgroundInput` is mixed into the app (as :class:`~.gpu_switching.GpuSwitching` is).
The handlers update the :class:`Session` and mark the screen dirty; the app's timer redraws,
except for a backend's first number after a key, which is drawn at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.lab.session import Session
from ..core.protocol.records import Ready, Sample, TracesCaptured
from ..engine.host.supervisor import EngineDied, EngineRecycled, EngineStarting
from ..telemetry.gpu_snapshot import GpuSnapshot
from .messages import EngineEvent, EngineRecords, GpuUpdate

if TYPE_CHECKING:
    from ..core.backends import Backend
    from .snapshot_requests import SnapshotFlow


class BackgroundInput:
    """Mixin for the app: ``on_engine_records``, ``on_engine_event`` and ``on_gpu_update``."""

    # set by the app
    session: Session
    snapshots: SnapshotFlow
    gpu: GpuSnapshot | None
    engine_state: str
    _dirty: bool
    # set here
    _replacing_engine: float | None  # MiB the engine being replaced had grown
    _last_error: str
    _numbered: tuple[int, set[Backend]]  # a configuration, backends drawn at once

    if TYPE_CHECKING:
        def status(self, text: str, error: bool = False) -> None: ...

        def _redraw(self) -> None: ...

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._replacing_engine = None
        self._last_error = ""
        self._numbered = (-1, set())

    def on_engine_records(self, message: EngineRecords) -> None:
        for record in message.records:
            if self.session.apply(record):
                self._dirty = True
            if isinstance(record, Ready):
                self.engine_state = ""
                mode = "the CPU" if record.environment.is_cpu else record.environment.device_name
                if self._replacing_engine is None:
                    self.status(f"engine ready on {mode}")
                else:
                    self.status(f"fresh engine ready on {mode}: the last one had grown {self._replacing_engine:,.0f} MiB "
                                "of host memory (history kept)")
                self._replacing_engine = None
            elif isinstance(record, TracesCaptured):
                self.snapshots.traces_captured(record)
        if self._first_numbers_of_configuration(message.records):
            self._redraw()  # a backend's first number after a key or at start: now, not at the next tick
            self._dirty = True  # and again at the tick, once the layout has settled (cheap: unchanged parts skip)
        errors = list(self.session.errors)  # kept in the session: snapshots export them
        if errors and errors[-1] != self._last_error:
            self._last_error = errors[-1]
            self.status(errors[-1], error=True)

    def _first_numbers_of_configuration(self, records: list[Any]) -> bool:
        """Whether ``records`` bring some backend's first number of the current configuration."""
        current = self.session.config_id
        if self._numbered[0] != current:
            self._numbered = (current, set())
        drawn = self._numbered[1]
        fresh = {r.backend for r in records if isinstance(r, Sample) and r.config_id == current} - drawn
        drawn |= fresh
        return bool(fresh)

    def on_engine_event(self, message: EngineEvent) -> None:
        event = message.event
        if isinstance(event, EngineStarting) and event.attempt > 1:
            self.engine_state = f"restarting the engine (attempt {event.attempt})"
        elif isinstance(event, EngineRecycled):
            self._replacing_engine = event.growth_mib
            self.engine_state = "restarting the engine to give host memory back"
            self.status(f"the engine's host memory grew {event.growth_mib:,.0f} MiB beyond its first uses "
                        "(torch keeps it for good); restarting it, history kept")
        elif isinstance(event, EngineDied):
            if event.retry_in_s is None:
                self.engine_state = "engine stopped: it died repeatedly on this workload"
                self.status(f"engine died again ({event.message}); not retrying: change the workload or press r", error=True)
            else:
                self.engine_state = f"engine died; restarting in {event.retry_in_s:.0f} s"
                self.status(f"engine died: {event.message}; history kept, restarting", error=True)
        self._dirty = True

    def on_gpu_update(self, message: GpuUpdate) -> None:
        self.gpu = message.snapshot
        flags = [name for name, on in (("throttled", message.snapshot.throttled),
                                       ("shared", bool(message.snapshot.other_processes))) if on]
        self.session.gpu_conditions = tuple(flags)
        self._dirty = True
