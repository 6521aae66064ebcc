"""The state of one backend in a live session: its measurement windows, its kernels, its verdicts,
and the history of its samples (:class:`HistoryRow`) for the exports."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..backends import Backend
from ..protocol.records import Accuracy, KernelInfo
from ..stats import Window
from ..status import Status
from ..traces import kernel_names
from .history_ring import HistoryRing


@dataclass(frozen=True)
class HistoryRow:
    """One sample as it goes to ``history.csv``."""

    time: float
    config_id: int
    backend: Backend
    workload: str
    gpu_us: float | None
    eager_us: float
    kernel_us: float | None
    conditions: str  # what may make the sample read high: "", or "throttled", "shared", "cpu-contended",
    # "profiler-starting" joined by +


@dataclass
class BackendState:
    backend: Backend
    enabled: bool = True
    status: Status = Status.WAITING
    reason: str = ""
    details: tuple[str, ...] = ()
    kernel: Window = field(default_factory=Window)
    gpu: Window = field(default_factory=Window)
    eager: Window = field(default_factory=Window)
    eager_provisional: int = 0
    """How many of ``eager``'s values were taken while the profiler process was starting: shown while there is
    nothing better, dropped at the first sample taken apart from it (:meth:`add_eager`)."""
    gpu_sm_mhz: Window = field(default_factory=Window)  # the GPU's SM clock at each GPU/call sample (NVML)
    kernel_sm_mhz: Window = field(default_factory=Window)  # and at each kernel burst (the profiler process's)
    kernels: tuple[KernelInfo, ...] = ()  # measured: the profiler's last burst
    graph_kernels: tuple[KernelInfo, ...] = ()  # named from the CUDA graph's nodes, untimed: shown until ``kernels``
    capture_error: str = ""  # the last kernel capture failed: why (the kernels shown are older)
    peak_bytes: int | None = None
    last_sample_time: float = 0.0
    gpu_method: str = ""
    eligibility: str = ""  # whether it could run this workload, probed even with its flag off
    eligibility_reason: str = ""
    accuracy: Accuracy | None = None
    version: int = 0  # bumped on every change, so views can skip redrawing what did not change
    history: HistoryRing[HistoryRow] = field(default_factory=HistoryRing)

    def clear_numbers(self) -> None:
        """Forget the measurements of the current workload (the history stays)."""
        self.version += 1
        for window in (self.kernel, self.gpu, self.eager, self.gpu_sm_mhz, self.kernel_sm_mhz):
            window.clear()
        self.eager_provisional = 0
        self.kernels = self.graph_kernels = ()
        self.capture_error = ""
        self.peak_bytes = None
        self.accuracy = None

    def reset_measurements(self) -> None:
        """A new workload: numbers, eligibility and status all start again."""
        self.clear_numbers()
        self.eligibility = self.eligibility_reason = ""
        self.status, self.reason, self.details = Status.WAITING, "", ()

    def add_eager(self, eager_us: float, profiler_starting: bool) -> None:
        """One eager sample. The profiler process's start (an interpreter and ``import torch`` in a second process)
        slows the slices timed beside it, most on a busy CPU, where it takes the one free core: the kernel clock
        read 0.52-0.63x such eager medians on the 2-core VM (docs/lab-notes/cpu-kernel-clock.md). Those samples
        stand in until one taken apart from the start arrives, then leave the window."""
        if profiler_starting:
            if len(self.eager) == self.eager_provisional:  # nothing better yet: the first numbers on screen
                self.eager.add(eager_us)
                self.eager_provisional = len(self.eager)  # all of them (the window keeps its last values only)
            return
        if self.eager_provisional:  # every value in the window is provisional (the rule above)
            self.eager.clear()
            self.eager_provisional = 0
        self.eager.add(eager_us)

    @property
    def eager_settled(self) -> int:
        """Eager samples taken apart from the profiler process's start."""
        return len(self.eager) - self.eager_provisional

    @property
    def main_kernel(self) -> KernelInfo | None:
        return kernel_names.main_kernel(self.kernels)

    @property
    def kernels_untimed(self) -> bool:
        """The kernels on screen are the graph's (names and launches, no times yet)."""
        return not self.kernels and bool(self.graph_kernels)

    @property
    def shown_kernels(self) -> tuple[KernelInfo, ...]:
        """What the panel names: the measured kernels, else the graph's."""
        return self.kernels or self.graph_kernels

    @property
    def kernel_count(self) -> int:
        return len(self.kernels)

    def sparkline_values(self, workload: str, count: int = 60) -> list[float]:
        """The latest GPU/call values (eager on the CPU) of ``workload``, oldest first."""
        values: list[float] = []
        for r in reversed(self.history):  # newest first: stop once there are enough
            if r.workload == workload:
                values.append(r.gpu_us if r.gpu_us is not None else r.eager_us)
                if len(values) == count:
                    break
        return values[::-1]
