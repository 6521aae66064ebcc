"""The records the measuring engine sends the UI, and the plain values they carry
(:class:`KernelInfo`, :class:`Environment`).

Only small frozen records of plain data cross the process boundary, as JSON
(:mod:`.wire_format`): never tensors, never pickles. The commands going the other way are in
:mod:`.engine_commands`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..backends import Backend
from ..dispatch_environment import CudnnLoaded, DispatchEnvironment, FlashImpl


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
    cpu_allocator: str | None = None
    """On the CPU, the allocator regime the engine's processes time calls in (``engine/measuring/cpu_allocator.py``);
    None where the C library's own was left."""
    default_priority_order: tuple[str, ...] = ()
    """torch's own order, read when the engine starts, before any SDPA call. Not necessarily
    the order in force: torch may reorder at the first call (cuDNN first on sm90 with cuDNN
    >= 9.15), and a custom order replaces it; :attr:`Dispatch.priority_order` is the one used."""
    notes: tuple[str, ...] = ()
    # what decides dispatch beyond the versions, read at the engine's start (``core/dispatch_environment.py``)
    cudnn_loaded: CudnnLoaded | None = None
    flash_impl: FlashImpl | None = None
    sdp_flags: dict[str, bool] = field(default_factory=dict, hash=False)  # compared, not hashed
    sdpa_env: dict[str, str] = field(default_factory=dict, hash=False)

    @property
    def is_cpu(self) -> bool:
        return self.device == "cpu"

    @property
    def dispatch_env(self) -> DispatchEnvironment:
        return DispatchEnvironment(self.cudnn_loaded, self.flash_impl, self.sdp_flags, self.sdpa_env)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Environment":
        d = dict(d)
        old = d.pop("priority_order", ())  # files written before the field was renamed
        d["default_priority_order"] = tuple(d.get("default_priority_order", old))
        d["notes"] = tuple(d.get("notes", ()))
        dispatch = DispatchEnvironment.from_dict(d)  # files written before these fields: all empty
        d.update(cudnn_loaded=dispatch.cudnn_loaded, flash_impl=dispatch.flash_impl, sdp_flags=dispatch.sdp_flags,
                 sdpa_env=dispatch.sdpa_env)
        return cls(**d)


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
    status: str  # a core.status.Status value (the wire carries its string)
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
    sm_mhz: int | None = None
    """The GPU's SM clock (NVML) right after the GPU/call sample; None on the CPU or without NVML."""
    profiler_starting: bool = False
    """Taken while the profiler process was starting (its interpreter and ``import torch``: seconds of CPU beside
    this slice); its eager time counts only until a sample taken apart from it arrives."""


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
    sm_mhz: int | None = None  # the GPU's SM clock (NVML) right after the burst; None on the CPU or without NVML


@dataclass(frozen=True)
class GraphKernels:
    """One call's kernels as the nodes of the GPU/call clock's CUDA graph name them: names and launch configuration,
    no durations (``duration_us`` 0). Sent at the graph's capture, seconds before the profiler's first burst; shown
    until a :class:`KernelCapture` brings the measured kernels, never exported as measured."""

    TYPE: ClassVar[str] = "graph_kernels"
    config_id: int
    backend: Backend
    kernels: tuple[KernelInfo, ...]
    time: float = 0.0


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
    # fwd+bwd workloads: dq, dk, dv against float64 MATH's on the same inputs and output gradient
    grad_max_abs: tuple[float, float, float] | None = None
    grad_max_rel: tuple[float, float, float] | None = None
    nonfinite: tuple[str, ...] = ()  # which of "out", "dq", "dk", "dv" hold NaN or Inf


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
    configured allowance, memory only a new process gets back (docs/lab-notes/faults.md)."""

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



EngineRecord = (Ready | BackendStatus | Sample | KernelCapture | GraphKernels | Dispatch | PeakFlops | Accuracy
                | TracesCaptured | Log | EngineError | Recycling | EngineHealth | StartupTimes)
"""Any record the engine sends the UI."""
