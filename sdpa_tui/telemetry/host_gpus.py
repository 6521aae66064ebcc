"""Every GPU of the host through NVML, read in one pass into one frozen record.

:class:`HostGpuReader` counts the GPUs once (``nvmlDeviceGetCount``) and keeps one
:class:`NvmlReader` per GPU on the same ``pynvml`` module, so each reading is one
:class:`GpuSnapshot` per GPU with the same "n/a and why" rules. Never raises: no NVML,
no driver, or a count that fails gives a :class:`HostGpus` with ``reason`` set and no GPUs.

GPU numbers are NVML's indices (PCI bus order). ``cuda:N`` in torch is the same GPU only
when ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (the engine process sets it unless the user did) and
``CUDA_VISIBLE_DEVICES`` is unset.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .gpu_poller import GpuPoller
from .gpu_snapshot import GpuSnapshot
from .nvml import NvmlReader, error_text, import_pynvml


@dataclass(frozen=True)
class HostGpus:
    """One reading of all GPUs of the host. ``reason`` says why there are none to show."""

    gpus: tuple[GpuSnapshot, ...] = ()
    reason: str | None = None
    time: float = field(default_factory=time.time)
    read_s: float = 0.0
    """How long the whole reading took (seconds, wall clock)."""

    @property
    def count(self) -> int:
        return len(self.gpus)

    def get(self, index: int) -> GpuSnapshot | None:
        """The reading of NVML GPU ``index`` (None when the host has no such GPU)."""
        return next((g for g in self.gpus if g.index == index), None)

    @property
    def throttled(self) -> tuple[int, ...]:
        return tuple(g.index for g in self.gpus if g.throttled)

    @property
    def shared(self) -> tuple[int, ...]:
        """GPUs with a compute process that is not ours."""
        return tuple(g.index for g in self.gpus if g.other_processes)

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "time": self.time, "read_s": self.read_s,
                "gpus": [g.to_dict() for g in self.gpus]}


class HostGpuReader:
    """Reads every GPU of the host. Thread-safe; never raises. ``nvml``: a stand-in for tests."""

    def __init__(self, nvml: Any = None) -> None:
        self._nvml = nvml
        self._lock = threading.RLock()
        self._readers: list[NvmlReader] | None = None
        self._reason: str | None = None

    @property
    def reason(self) -> str | None:
        """Why no GPU can be read (None when NVML is open or not tried yet)."""
        return self._reason

    def count(self) -> int | None:
        """How many GPUs NVML sees; None when NVML cannot say (see ``reason``)."""
        with self._lock:
            return len(self._readers) if self._open() else None

    def _open(self) -> bool:
        if self._readers is not None:
            return True
        if self._reason is not None:
            return False
        if self._nvml is None:
            self._nvml, self._reason = import_pynvml()
            if self._nvml is None:
                return False
        try:
            self._nvml.nvmlInit()
            try:
                count = int(self._nvml.nvmlDeviceGetCount())
            finally:
                self._nvml.nvmlShutdown()  # each reader holds its own (reference-counted) init
        except Exception as exc:
            self._reason = error_text(self._nvml, exc)[0]
            return False
        self._readers = [NvmlReader(i, nvml=self._nvml) for i in range(count)]
        if count == 0:
            self._reason = "NVML sees no GPU"
        return True

    def snapshot(self, own_pids: Iterable[int] | None = None) -> HostGpus:
        """All GPUs in one pass; ``own_pids`` (our engines) are not counted as other processes."""
        pids = frozenset(own_pids or ())
        started, t0 = time.time(), time.perf_counter()
        with self._lock:
            if not self._open() or not self._readers:
                return HostGpus((), self._reason or "NVML unavailable", started, time.perf_counter() - t0)
            gpus = tuple(reader.snapshot(pids) for reader in self._readers)
        return HostGpus(gpus, None, started, time.perf_counter() - t0)

    def close(self) -> None:
        with self._lock:
            for reader in self._readers or ():
                reader.close()
            self._readers = None
            self._reason = None

    def __enter__(self) -> HostGpuReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def gpu_count(nvml: Any = None) -> tuple[int | None, str | None]:
    """(number of GPUs NVML sees, or None, and why not). Opens and closes NVML once."""
    reader = HostGpuReader(nvml)
    try:
        n = reader.count()
        return n, reader.reason if not n else None
    finally:
        reader.close()


class HostGpuPoller(GpuPoller):
    """Calls ``callback(HostGpus)`` every ``interval`` seconds from a daemon thread."""

    def __init__(self, callback: Any, interval: float = 1.0, reader: HostGpuReader | None = None,
                 own_pids: Iterable[int] = ()) -> None:
        super().__init__(callback, interval, reader=reader or HostGpuReader(), own_pids=own_pids)  # type: ignore[arg-type]
        self._owns_reader = reader is None
