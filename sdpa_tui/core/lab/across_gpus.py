"""The same workload on several GPUs, side by side: one row per GPU, ratios, outliers.

Plain Python. A GPU is an *outlier* when it runs the same kernel as other GPUs but its
median time on one of the three clocks is more than ``threshold`` above the median of those
others: same code, slower silicon (throttled, shared, a lower clock, a bad link), which is what
``--devices all`` is for. Every clock is judged: on two H200s, a GPU time-sliced with a
neighbour whose queue never empties kept its kernel and GPU/call times (each replay sample fits
in one of its slices) while its eager calls took 2.97x the other GPU's (docs/lab-notes/gpus.md).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..status import Status

if TYPE_CHECKING:  # the CLI imports this module for parse_devices at every start: the session model is not needed
    from .session import Session

OUTLIER_THRESHOLD = 0.10
"""A GPU whose median is more than 10 % above the others' (same kernel) is named."""
CLOCKS = ("kernel", "gpu", "eager")
"""The three clocks (README, "The three clocks"): kernel sum (CUPTI), GPU / call (graph replay), eager / call."""
OUTLIER_CLOCK = "gpu"
"""The ratio column's clock: GPU / call, device time with many samples, no host launch overhead. Outliers are
judged on every clock (a shared GPU may show only on the eager one)."""


@dataclass(frozen=True)
class GpuResult:
    """What one GPU did with the workload: the backend SDPA picked and its medians (µs)."""

    gpu: int
    device_name: str = ""
    backend: str | None = None  # the backend SDPA picks with the enabled flags; None: none available
    kernel: str | None = None  # that backend's main kernel (short name)
    kernel_us: float | None = None
    gpu_us: float | None = None
    eager_us: float | None = None
    note: str = ""  # why there is no number (engine failed, not eligible, ...)

    def median(self, clock: str) -> float | None:
        return getattr(self, f"{clock}_us")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Outlier:
    gpu: int
    kernel: str
    clock: str
    median_us: float
    others_us: float  # the median of the other GPUs' medians (same kernel)
    ratio: float  # median_us / others_us

    def describe(self) -> str:
        return (f"GPU {self.gpu} is {self.ratio:.2f}x the others on {self.kernel} "
                f"({self.median_us:.1f} vs {self.others_us:.1f} µs, {self.clock} clock)")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def result_from_session(gpu: int, session: Session, note: str = "") -> GpuResult:
    """The picked backend's row of ``session`` as one GPU's result."""
    env = session.environment
    name = env.device_name if env else ""
    choice = session.dispatch.choice if session.dispatch else None
    if choice is None:
        reason = session.dispatch.reason if session.dispatch else ""
        return GpuResult(gpu, name, note=note or reason or "no backend picked")
    row = next(r for r in session.rows() if r.backend is choice)

    def med(summary: Any) -> float | None:
        return summary.median if summary else None

    return GpuResult(gpu, name, choice.label, row.main_kernel, med(row.kernel_us), med(row.gpu_us),
                     med(row.eager_us), note or (row.reason if row.status != Status.OK else ""))


def clock_for(results: Iterable[GpuResult]) -> str:
    """The clock to compare on: GPU / call where any GPU has it, else kernel sum, else eager
    (the CPU has no device clock)."""
    results = tuple(results)
    for clock in (OUTLIER_CLOCK, "kernel", "eager"):
        if any(r.median(clock) for r in results):
            return clock
    return OUTLIER_CLOCK


def ratios_to_fastest(results: Iterable[GpuResult], clock: str = OUTLIER_CLOCK) -> dict[int, float]:
    """Each GPU's median over the fastest GPU's, on ``clock`` (GPUs without a number left out)."""
    timed = {r.gpu: value for r in results if (value := r.median(clock))}
    if not timed:
        return {}
    fastest = min(timed.values())
    return {gpu: value / fastest for gpu, value in timed.items()}


def find_outliers(results: Iterable[GpuResult], threshold: float = OUTLIER_THRESHOLD,
                  clock: str | None = None) -> tuple[Outlier, ...]:
    """GPUs whose median on ``clock`` (None: on any of the three clocks) is more than ``threshold`` (0.10: 10 %)
    above the median of the other GPUs that ran the same kernel; on several clocks, a GPU is named once, on the clock
    where it is the most behind. A kernel run by one GPU only has no peers to compare with: it names no outlier (a
    different kernel is a different story)."""
    if threshold < 0:
        raise ValueError(f"threshold must be 0 or more, got {threshold}")
    results = tuple(results)
    if clock is None:
        worst: dict[int, Outlier] = {}
        for each in (OUTLIER_CLOCK, *(c for c in CLOCKS if c != OUTLIER_CLOCK)):  # a tie goes to GPU / call
            for found in _outliers_on(results, threshold, each):
                if found.gpu not in worst or found.ratio > worst[found.gpu].ratio * (1 + 1e-9):
                    worst[found.gpu] = found
        return tuple(sorted(worst.values(), key=lambda o: o.gpu))
    return _outliers_on(results, threshold, clock)


def _outliers_on(results: tuple[GpuResult, ...], threshold: float, clock: str) -> tuple[Outlier, ...]:
    by_kernel: dict[str, list[tuple[int, float]]] = {}
    for r in results:
        value = r.median(clock)
        if r.kernel and value:
            by_kernel.setdefault(r.kernel, []).append((r.gpu, value))
    found = []
    for kernel, timed in by_kernel.items():
        for gpu, value in timed:
            others = [v for g, v in timed if g != gpu]
            if not others:
                continue
            reference = statistics.median(others)
            if value > reference * (1.0 + threshold):
                found.append(Outlier(gpu, kernel, clock, value, reference, value / reference))
    return tuple(sorted(found, key=lambda o: o.gpu))


def outlier_line(outliers: Iterable[Outlier], count: int, threshold: float = OUTLIER_THRESHOLD) -> str:
    """One line naming the outliers, or saying there are none."""
    outliers = tuple(outliers)
    if count < 2:
        return "outliers: one GPU only, nothing to compare"
    if not outliers:
        return (f"outliers: none (no GPU more than {threshold:.0%} slower than the others on the same kernel, "
                "on any clock)")
    return "outliers: " + "; ".join(o.describe() for o in outliers)


def comparison_dict(results: Iterable[GpuResult], threshold: float = OUTLIER_THRESHOLD,
                    clock: str | None = None) -> dict[str, Any]:
    """JSON-ready: per GPU its result and ratio to the fastest on ``clock`` (by default :func:`clock_for` the
    results), plus the outliers (on every clock, each with its own)."""
    results = tuple(results)
    clock = clock or clock_for(results)
    ratios = ratios_to_fastest(results, clock)
    return {
        "clock": clock,
        "threshold": threshold,
        "gpus": [{**r.to_dict(), "ratio_to_fastest": ratios.get(r.gpu)} for r in results],
        "outliers": [o.to_dict() for o in find_outliers(results, threshold)],
    }


# ------------------------------------------------------------------ --devices
def parse_devices(text: str, count: int | None, why_none: str | None = None) -> tuple[int, ...]:
    """``all`` or a comma list of GPU indices (``0,1``), checked against the ``count`` GPUs of
    the host. Raises ValueError with one line saying what is wrong."""
    text = text.strip()
    wanted: list[int] = []
    for part in ([] if text == "all" else text.split(",")):
        part = part.strip().removeprefix("cuda:")
        if not part.isdigit():
            raise ValueError(f"--devices takes 'all' or GPU indices like 0,1; got {text!r}")
        if int(part) not in wanted:
            wanted.append(int(part))
    if not count:
        where = f" ({why_none})" if why_none else ""
        raise ValueError(f"--devices {text}: no GPU found on this host{where}; use --device cpu to measure on the CPU")
    for index in wanted:
        if index >= count:
            raise ValueError(f"--devices: GPU {index} is out of range: this host has {count} GPU(s), 0 to {count - 1}")
    return tuple(range(count)) if text == "all" else tuple(wanted)
