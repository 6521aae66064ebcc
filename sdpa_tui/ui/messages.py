"""Messages that carry background work (the engine's records and events, NVML readings) to the app.

Posted from the threads that read them (``post_message`` is thread-safe): the supervisor's reader thread, the
per-GPU engines' threads, the NVML poller's thread. Each carries plain frozen values; handlers set the app's
reactives and apply records to the session, and ``watch_*`` methods redraw.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from ..core.protocol.engine_events import EngineLifecycle
from ..core.protocol.records import EngineRecord
from ..telemetry.gpu_snapshot import GpuSnapshot
from ..telemetry.host_gpus import HostGpus


@dataclass
class EngineRecords(Message):
    """A batch of records from the engine process."""

    records: list[EngineRecord]


@dataclass
class EngineEvent(Message):
    """The engine process started, died, or is being restarted."""

    event: EngineLifecycle


@dataclass
class GpuUpdate(Message):
    """A new NVML reading of the watched GPU; only the latest one matters."""

    snapshot: GpuSnapshot

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, GpuUpdate)


@dataclass
class HostGpusUpdate(Message):
    """A new NVML reading of every GPU; only the latest one matters."""

    host: HostGpus

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, HostGpusUpdate)


@dataclass
class DeviceRecords(Message):
    """Records from the engine on GPU ``index`` (``--devices``: one engine per GPU)."""

    index: int
    records: list[EngineRecord]


@dataclass
class DeviceEvent(Message):
    """The engine on GPU ``index`` started, died, or is being restarted."""

    index: int
    event: EngineLifecycle
