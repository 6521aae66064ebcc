"""What is known so far: the state built from the engine's records, shared by the UI and the report.

A :class:`Session` applies records one by one and answers questions about them (medians,
the main kernel, speedups). It holds no Textual and no torch. Each backend's own state is a
:class:`~.backend_state.BackendState`.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from ..backends import ALL_BACKENDS, Backend
from ..protocol.records import (
    Accuracy,
    BackendStatus,
    Dispatch,
    EngineError,
    Environment,
    GraphKernels,
    KernelCapture,
    KernelInfo,
    Log,
    PeakFlops,
    Ready,
    Sample,
    StartupTimes,
)
from ..stats import Summary, Window
from ..status import Status
from ..traces.kernel_short_names import short_name
from ..workload import Workload
from .backend_state import BackendState, HistoryRow
from .duty import BusyWindow
from .faster import Faster, FasterTracker


@dataclass(frozen=True)
class BackendRow:
    """One line of the comparison table, as the report and the exports print it."""

    backend: Backend
    enabled: bool
    status: str
    reason: str
    details: tuple[str, ...]
    main_kernel: str | None
    main_kernel_full: str | None
    kernels_per_call: int | None
    kernel_us: Summary | None
    gpu_us: Summary | None
    eager_us: Summary | None
    speedup_vs_math: float | None
    tflops: float | None
    peak_mib: float | None
    kernels: tuple[KernelInfo, ...]
    pct_of_peak: float | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    eligibility: str = ""
    eligibility_reason: str = ""
    grad_max_rel: tuple[float, float, float] | None = None  # dq, dk, dv against float64 MATH's (fwd+bwd)
    grad_max_abs: tuple[float, float, float] | None = None
    nonfinite: tuple[str, ...] = ()  # which of out, dq, dk, dv held NaN or Inf
    gpu_sm_mhz: float | None = None  # median SM clock (NVML) over the GPU/call samples
    kernel_sm_mhz: float | None = None  # median SM clock over the kernel bursts


class Session:
    """Everything measured for the current workload, plus the history of earlier ones."""

    def __init__(self, workload: Workload, enabled: tuple[Backend, ...] = ALL_BACKENDS) -> None:
        self.environment: Environment | None = None
        self.workload = workload
        self.config_id = 0
        self.backends: dict[Backend, BackendState] = {b: BackendState(b) for b in ALL_BACKENDS}
        self.dispatch: Dispatch | None = None
        self.logs: deque[str] = deque(maxlen=500)
        self.errors: deque[str] = deque(maxlen=100)
        # what may make samples read high, from telemetry: the GPU's ("throttled", "shared") and the host's CPUs
        self.gpu_conditions: tuple[str, ...] = ()
        self.cpu_contended = False
        self.legacy_api = False  # flags applied as torch.backends.cuda.sdp_kernel does
        self.incomplete = ""
        """A headless measurement's time ran out before every backend had its samples: what is short."""
        self.peaks: dict[str, PeakFlops] = {}
        self.startup: StartupTimes | None = None
        """The engine's start-up phases (the latest record of the latest engine)."""
        self._faster = FasterTracker()
        self.engine_busy = BusyWindow()
        """The engine's duty cycle on its device (kept across workloads: the device was busy)."""
        self.set_enabled(enabled)

    # -- changes requested by the user -----------------------------------------------------
    @property
    def enabled(self) -> tuple[Backend, ...]:
        return tuple(b for b in ALL_BACKENDS if self.backends[b].enabled)

    def set_enabled(self, enabled: tuple[Backend, ...]) -> None:
        for backend, state in self.backends.items():
            state.version += 1
            if state.enabled and backend not in enabled:
                state.clear_numbers()  # a backend switched off shows no stale numbers
            state.enabled = backend in enabled
            if not state.enabled:
                state.status, state.reason = Status.DISABLED, "flag off"
            elif state.status == Status.DISABLED:
                state.status, state.reason = Status.WAITING, ""

    def set_workload(self, workload: Workload) -> None:
        if workload != self.workload:
            self.workload = workload
            for state in self.backends.values():
                state.reset_measurements()
            self.set_enabled(self.enabled)
            self.dispatch = None

    def next_config_id(self) -> int:
        """A new configuration was sent to the engine: records of older ones are stale."""
        self.config_id += 1
        return self.config_id

    # -- records from the engine -----------------------------------------------------------
    def apply(self, record: object) -> bool:
        """Apply one engine record; return whether anything shown changed."""
        if isinstance(record, Ready):
            self.environment = record.environment
            return True
        if isinstance(record, Log):
            self.logs.append(record.line)
            return False
        if isinstance(record, EngineError):
            self.errors.append(record.message)
            return True
        if isinstance(record, PeakFlops):
            self.peaks[record.dtype] = record
            return True
        if isinstance(record, StartupTimes):
            self.startup = record
            return False
        config_id = getattr(record, "config_id", None)
        if config_id != self.config_id:
            return False  # measured for a workload or flag set that is gone
        if isinstance(record, Dispatch):
            self.dispatch = record
            if self.legacy_api and record.effective and set(record.effective) != set(self.enabled):
                self.set_enabled(record.effective)  # the legacy API leaves cuDNN on: show the truth
            return True
        backend = getattr(record, "backend", None)
        if not isinstance(backend, Backend):
            return False
        state = self.backends[backend]
        if isinstance(record, BackendStatus):
            state.version += 1
            state.eligibility, state.eligibility_reason = record.status, record.reason
        if not state.enabled:
            return isinstance(record, BackendStatus)
        state.version += 1
        if isinstance(record, Accuracy):
            state.accuracy = record
            return True
        if isinstance(record, BackendStatus):
            state.status, state.reason, state.details = Status(record.status), record.reason, record.details
            return True
        if isinstance(record, GraphKernels):
            state.graph_kernels = record.kernels
            return True
        if isinstance(record, KernelCapture):
            state.capture_error = record.error
            if record.kernels or not record.error:  # a failed capture keeps the last kernels shown
                state.kernels = record.kernels
            state.kernel.extend(record.kernel_us)
            state.kernel_sm_mhz.add(record.sm_mhz if record.kernel_us else None)
            if record.peak_bytes is not None:
                state.peak_bytes = record.peak_bytes
            return True
        if isinstance(record, Sample):
            state.status = Status.OK
            state.gpu.add(record.gpu_us)
            state.add_eager(record.eager_us, record.profiler_starting)
            state.gpu_sm_mhz.add(record.sm_mhz)
            state.last_sample_time = record.time or time.time()
            if record.busy_s is not None:
                self.engine_busy.add(state.last_sample_time, record.busy_s)
            state.gpu_method = record.gpu_method
            kernel = state.kernel.summary()
            state.history.append(
                HistoryRow(
                    time=state.last_sample_time,
                    config_id=record.config_id,
                    backend=record.backend,
                    workload=self.workload.describe(),
                    gpu_us=record.gpu_us,
                    eager_us=record.eager_us,
                    kernel_us=kernel.median if kernel else None,
                    conditions="+".join((*self.gpu_conditions, *(("cpu-contended",) if self.cpu_contended else ()),
                                         *(("profiler-starting",) if record.profiler_starting else ()))),
                )
            )
            return True
        return False

    # -- answers ---------------------------------------------------------------------------
    def rows(self) -> list[BackendRow]:
        """The comparison table, one row per backend in display order."""
        math = self.backends[Backend.MATH]
        math_time = _reference_time(math)
        rows = []
        for backend in ALL_BACKENDS:
            s = self.backends[backend]
            main = s.main_kernel
            ref = _reference_time(s)
            speedup = math_time / ref if (math_time and ref) else None
            tflops = self.workload.flops / (ref * 1e-6) / 1e12 if ref else None
            peak = self.peaks.get(self.workload.dtype)
            accuracy = s.accuracy
            rows.append(
                BackendRow(
                    backend=backend,
                    enabled=s.enabled,
                    status=s.status,
                    reason=s.reason,
                    details=s.details,
                    main_kernel=short_name(main.name) if main else None,
                    main_kernel_full=main.name if main else None,
                    kernels_per_call=len(s.kernels) if s.kernels else None,
                    kernel_us=s.kernel.summary(),
                    gpu_us=s.gpu.summary(),
                    eager_us=s.eager.summary(),
                    speedup_vs_math=speedup,
                    tflops=tflops,
                    peak_mib=s.peak_bytes / 2**20 if s.peak_bytes is not None else None,
                    kernels=s.kernels,
                    pct_of_peak=share_of_peak(tflops, peak.tflops if peak else None),
                    max_abs_error=accuracy.max_abs if accuracy else None,
                    max_rel_error=accuracy.max_rel if accuracy else None,
                    eligibility=s.eligibility,
                    eligibility_reason=s.eligibility_reason,
                    grad_max_rel=accuracy.grad_max_rel if accuracy else None,
                    grad_max_abs=accuracy.grad_max_abs if accuracy else None,
                    nonfinite=accuracy.nonfinite if accuracy else (),
                    gpu_sm_mhz=_median(s.gpu_sm_mhz),
                    kernel_sm_mhz=_median(s.kernel_sm_mhz),
                )
            )
        return rows

    def faster(self) -> tuple[Faster, ...]:
        """The enabled backends that ran and beat SDPA's pick beyond the noise, fastest first.

        On GPU/call where the pick has it, else on eager/call (the CPU). ``()`` while the pick is
        unknown or not measured, or when it is the fastest. Stable between redraws (see core.faster).
        """
        pick = self.dispatch.choice if self.dispatch else None
        if pick is None or self.backends[pick].status != Status.OK:
            return ()
        clock = "gpu" if len(self.backends[pick].gpu) else "eager"
        summaries = {
            b: getattr(s, clock).summary()
            for b, s in self.backends.items()
            if s.enabled and s.status == Status.OK and s.eligibility in ("", "ok")
        }
        return self._faster.update((self.config_id, pick, clock), pick, summaries, clock)

    def history(self) -> list[HistoryRow]:
        rows = [r for s in self.backends.values() for r in s.history]
        return sorted(rows, key=lambda r: r.time)


def share_of_peak(tflops: float | None, peak_tflops: float | None) -> float | None:
    """Percent of the measured matmul peak; None where there is none, or where the rate is
    above it (then the measured peak is no ceiling here: a share over 100 % says nothing)."""
    if not tflops or not peak_tflops or tflops > peak_tflops:
        return None
    return 100 * tflops / peak_tflops


def _median(window: Window) -> float | None:
    summary = window.summary()
    return summary.median if summary else None


def _reference_time(state: BackendState) -> float | None:
    """The clock speedups and TFLOP/s are computed on: GPU/call, or eager on the CPU."""
    if state.status != Status.OK:
        return None
    summary = state.gpu.summary() or state.eager.summary()
    return summary.median if summary else None
