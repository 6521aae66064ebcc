"""The records that cross the process boundary between the UI and the measuring engine.

Only small frozen records of plain data cross, as JSON: never tensors, never pickles.
Each message carries the protocol version; a peer speaking another version is refused.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from .backends import Backend
from .workload import Workload

PROTOCOL_VERSION = 1


class ProtocolError(ValueError):
    """A message that is not a record of this protocol version."""


@dataclass(frozen=True)
class KernelInfo:
    """One GPU activity (kernel, memset, memcpy) of one call; on the CPU, one leaf op."""

    name: str
    duration_us: float
    category: str = "kernel"  # kernel | gpu_memset | gpu_memcpy | cpu_op
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    shared_memory: int | None = None  # bytes per block (static + dynamic)
    registers: int | None = None  # per thread
    occupancy: float | None = None  # Kineto's "est. achieved occupancy %"
    blocks_per_sm: float | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "KernelInfo":
        d = dict(d)
        for key in ("grid", "block"):
            if d.get(key) is not None:
                d[key] = tuple(d[key])
        return cls(**d)


@dataclass(frozen=True)
class Environment:
    device: str  # "cuda:0" or "cpu"
    device_name: str
    torch_version: str
    cuda_version: str | None = None
    cudnn_version: str | None = None
    sm: str | None = None  # "9.0"
    sm_count: int | None = None
    memory_total_bytes: int | None = None
    l2_bytes: int | None = None
    cpu_threads: int | None = None
    default_priority_order: tuple[str, ...] = ()
    """torch's own order, read when the engine starts, before any SDPA call. Not necessarily
    the order in force: torch may reorder at the first call (cuDNN first on sm90 with cuDNN
    >= 9.15), and a custom order replaces it; :attr:`Dispatch.priority_order` is the one used."""
    notes: tuple[str, ...] = ()

    @property
    def is_cpu(self) -> bool:
        return self.device == "cpu"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Environment":
        d = dict(d)
        old = d.pop("priority_order", ())  # files written before the field was renamed
        d["default_priority_order"] = tuple(d.get("default_priority_order", old))
        d["notes"] = tuple(d.get("notes", ()))
        return cls(**d)


# ------------------------------------------------------------------ UI -> engine commands
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
keeps host memory for good (docs/gpu-measurements.md), and a fresh engine gets it back."""


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


# ------------------------------------------------------------------ engine -> UI events
@dataclass(frozen=True)
class Ready:
    TYPE: ClassVar[str] = "ready"
    environment: Environment


@dataclass(frozen=True)
class BackendStatus:
    """Whether a backend runs this workload: ``ok``, ``not eligible`` (with torch's reasons), or ``error``."""

    TYPE: ClassVar[str] = "backend_status"
    config_id: int
    backend: Backend
    status: str  # ok | not_eligible | error | oom | disabled
    reason: str = ""
    details: tuple[str, ...] = ()  # torch's full reason lines
    measured: bool = True  # False: its flag is off; probed only to say whether it could run


@dataclass(frozen=True)
class Sample:
    """One timing sample: GPU time per call and eager time per call, in microseconds."""

    TYPE: ClassVar[str] = "sample"
    config_id: int
    backend: Backend
    gpu_us: float | None  # None on the CPU
    eager_us: float
    gpu_method: str = "graph"  # graph | events | none | pending (graph captured from the next slice on)
    calls: int = 1
    time: float = 0.0  # wall clock (time.time()) when taken
    busy_s: float | None = None
    """Device time this slice's timed calls took (GPU/call, or eager on the CPU, times the
    calls made), for the engine's duty cycle; None from an engine that does not say."""


@dataclass(frozen=True)
class KernelCapture:
    """A short profiler burst: every activity of one call, and the kernel clock of each call."""

    TYPE: ClassVar[str] = "kernel_capture"
    config_id: int
    backend: Backend
    kernels: tuple[KernelInfo, ...]
    kernel_us: tuple[float, ...]  # per call of the burst: sum of its activities' durations
    peak_bytes: int | None = None  # extra device memory of one call
    time: float = 0.0
    error: str = ""  # the burst failed (no kernels): why, in one line


@dataclass(frozen=True)
class Dispatch:
    """What SDPA picks with the enabled backends as flags."""

    TYPE: ClassVar[str] = "dispatch"
    config_id: int
    choice: Backend | None  # None: no available kernel
    priority_order: tuple[str, ...] = ()
    """The order in force when SDPA chose (after torch's first-call reordering, with a custom
    order if one is set): the one that decided."""
    reason: str = ""
    effective: tuple[Backend, ...] = ()  # the backend flags torch saw as on
    note: str = ""  # one line on how the flags were applied (legacy API, custom priority)


@dataclass(frozen=True)
class PeakFlops:
    """The matmul throughput measured on this device in one dtype: the ceiling for TFLOP/s."""

    TYPE: ClassVar[str] = "peak_flops"
    dtype: str
    tflops: float
    detail: str = ""


@dataclass(frozen=True)
class Accuracy:
    """One backend's output against a float64 reference on the same inputs."""

    TYPE: ClassVar[str] = "accuracy"
    config_id: int
    backend: Backend
    max_abs: float | None
    max_rel: float | None  # max |out - ref| / max |ref|
    note: str = ""


@dataclass(frozen=True)
class TracesCaptured:
    TYPE: ClassVar[str] = "traces_captured"
    request_id: int
    paths: tuple[str, ...]
    error: str = ""


@dataclass(frozen=True)
class Log:
    """A line the engine's torch wrote to stderr, captured and forwarded as data."""

    TYPE: ClassVar[str] = "log"
    line: str


@dataclass(frozen=True)
class EngineError:
    """Something went wrong in the engine. ``fatal``: the engine is exiting."""

    TYPE: ClassVar[str] = "engine_error"
    message: str
    fatal: bool = False


@dataclass(frozen=True)
class Recycling:
    """The engine exits to be replaced by a fresh one: its host memory grew by more than the
    configured allowance, memory only a new process gets back (docs/faults.md)."""

    TYPE: ClassVar[str] = "recycling"
    rss_mib: float
    baseline_mib: float


@dataclass(frozen=True)
class EngineHealth:
    """The timing engine on itself, every few seconds while it measures: its host memory, and
    how many profiler sessions it started (always 0: kernels are captured in a sibling process)."""

    TYPE: ClassVar[str] = "engine_health"
    rss_mib: float | None
    profiler_starts: int
    profiler_pid: int | None = None  # the profiler process, while one runs


@dataclass(frozen=True)
class StartupTimes:
    """When the engine reached each step of its start-up (issue 12: the first number's budget).

    ``seconds[i]`` is when ``phases[i]`` ended, in seconds after the UI spawned the engine
    process; ``spawned_at`` is that moment on CLOCK_MONOTONIC (one clock for every process of
    the host on Linux, so a benchmark can place the phases on its own time line). Sent after
    the first Sample, then once more, ``complete``, when every running backend had its first
    kernel capture."""

    TYPE: ClassVar[str] = "startup_times"
    phases: tuple[str, ...]
    seconds: tuple[float, ...]
    spawned_at: float
    complete: bool = False

    def steps(self) -> list[tuple[str, float]]:
        """Each phase with its own duration: from the end of the one before (or the spawn)."""
        return [(name, end - start)
                for name, start, end in zip(self.phases, (0.0, *self.seconds), self.seconds)]


RECORD_TYPES = {
    cls.TYPE: cls
    for cls in (
        Configure,
        SetPaused,
        CaptureTraces,
        CaptureKernels,
        Shutdown,
        Ready,
        BackendStatus,
        Sample,
        KernelCapture,
        Dispatch,
        PeakFlops,
        Accuracy,
        TracesCaptured,
        Log,
        EngineError,
        Recycling,
        EngineHealth,
        StartupTimes,
    )
}


def _plain(value: Any) -> Any:
    if isinstance(value, Backend):
        return value.value
    if isinstance(value, Workload):
        return value.to_dict()
    if isinstance(value, (KernelInfo, Environment)):
        return {k: _plain(v) for k, v in asdict(value).items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def encode(record: Any) -> bytes:
    """Serialise a record to JSON bytes."""
    body = {f.name: _plain(getattr(record, f.name)) for f in fields(record)}
    return json.dumps({"type": record.TYPE, "v": PROTOCOL_VERSION, "body": body}).encode()


def decode(data: bytes) -> Any:
    """Parse JSON bytes back into a record, checking type and version."""
    try:
        msg = json.loads(data)
        kind, version, body = msg["type"], msg["v"], msg["body"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ProtocolError(f"not a record: {exc}") from exc
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {version}, expected {PROTOCOL_VERSION}")
    cls = RECORD_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ProtocolError(f"unknown record type {kind!r}")
    try:
        return cls(**{f.name: _typed(f.name, body[f.name]) for f in fields(cls) if f.name in body})
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"bad {kind} record: {exc}") from exc


def _typed(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in ("backend", "choice"):
        return Backend(value)
    if name in ("enabled", "effective", "priority"):
        return tuple(Backend(v) for v in value)
    if name == "workload":
        return Workload.from_dict(value)
    if name == "environment":
        return Environment.from_dict(value)
    if name == "kernels":
        return tuple(KernelInfo.from_dict(k) for k in value)
    if isinstance(value, list):
        return tuple(value)
    return value
