"""The commands that cross to the measuring engine: from the UI, and from the engine to its
profiler process (:class:`CaptureKernels`).

Frozen records of plain data, sent as JSON (:mod:`.wire_format`); the engine answers with the
records of :mod:`.records`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..backends import Backend
from ..workload import Workload


@dataclass(frozen=True)
class Configure:
    """Measure this workload on these backends. Every reply carries ``config_id``."""

    TYPE: ClassVar[str] = "configure"
    config_id: int
    workload: Workload
    enabled: tuple[Backend, ...]
    profile_every_s: float = 5.0  # a kernel burst per backend this often
    profile_every_max_s: float = 0.0  # if larger: the interval doubles after each burst, up to this
    recycle_growth_mib: float = 0.0  # exit to be replaced once RSS grew this much, first uses counted out (0: never)
    sample_interval_s: float = 0.0  # at least this long between two samples of one backend
    legacy_api: bool = False  # apply flags as torch.backends.cuda.sdp_kernel(...) does
    priority: tuple[Backend, ...] = ()  # a custom dispatch order (sdpa_kernel set_priority=True)


ENGINE_MEMORY_MIB = 1024.0
"""The live monitor's default ``recycle_growth_mib`` (``--engine-memory-mib``): on a GPU, torch
keeps host memory for good (docs/lab-notes/gpu-measurements.md), and a fresh engine gets it back."""


@dataclass(frozen=True)
class SetPaused:
    TYPE: ClassVar[str] = "set_paused"
    paused: bool


@dataclass(frozen=True)
class CaptureTraces:
    """Write one Chrome trace per enabled backend into ``directory``."""

    TYPE: ClassVar[str] = "capture_traces"
    request_id: int
    directory: str


@dataclass(frozen=True)
class CaptureKernels:
    """The engine asks its profiler process for one burst: ``calls`` calls of one backend on one
    workload, answered by a :class:`KernelCapture` with the same ``config_id`` and ``backend``.
    With ``trace_path``, the Chrome trace is written there too."""

    TYPE: ClassVar[str] = "capture_kernels"
    config_id: int
    workload: Workload
    backend: Backend
    calls: int
    trace_path: str = ""


@dataclass(frozen=True)
class Shutdown:
    TYPE: ClassVar[str] = "shutdown"

