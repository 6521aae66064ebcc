"""Messages that carry background work (engine, NVML) to the app, posted from their threads."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from ..telemetry.gpu_snapshot import GpuSnapshot
from ..telemetry.host_gpus import HostGpus


class EngineRecords(Message):
    """A batch of records from the engine process."""

    def __init__(self, records: list[Any]) -> None:
        super().__init__()
        self.records = records


class EngineEvent(Message):
    """The engine process started, died, or is being restarted."""

    def __init__(self, event: Any) -> None:
        super().__init__()
        self.event = event


class GpuUpdate(Message):
    """A new NVML reading; only the latest one matters."""

    def __init__(self, snapshot: GpuSnapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, GpuUpdate)


class HostGpusUpdate(Message):
    """A new NVML reading of every GPU; only the latest one matters."""

    def __init__(self, host: HostGpus) -> None:
        super().__init__()
        self.host = host

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, HostGpusUpdate)


class DeviceRecords(Message):
    """Records from the engine on GPU ``index`` (``--devices``: one engine per GPU)."""

    def __init__(self, index: int, records: list[Any]) -> None:
        super().__init__()
        self.index = index
        self.records = records


class DeviceEvent(Message):
    """The engine on GPU ``index`` started, died, or is being restarted."""

    def __init__(self, index: int, event: Any) -> None:
        super().__init__()
        self.index = index
        self.event = event
