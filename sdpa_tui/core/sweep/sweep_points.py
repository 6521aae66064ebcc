"""The points of a sweep, one verdict per (length, backend), and the :class:`Sweep` that collects them.

Pure analysis: no torch, no Textual, no Rich. ``sdpa-tui sweep`` feeds each length's comparison
rows (``Session.rows()``) to a :class:`Sweep`, which turns them into points (:class:`SweepPoint`)
and decides which backends are still measured at the next length.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from ..backends import ALL_BACKENDS, Backend
from ..lab.faster import Faster
from ..lab.session import BackendRow
from ..stats import Summary
from ..status import Status
from ..workload import Workload

OK, NOT_ELIGIBLE, OOM, ERROR = Status.OK, Status.NOT_ELIGIBLE, Status.OOM, Status.ERROR
SKIPPED = "skipped"
PENDING = "pending"
"""Point statuses: the engine's verdicts, plus ``skipped`` for a length the sweep did not measure and ``pending`` for
one a running sweep has not reached yet."""


@dataclass(frozen=True)
class SweepPoint:
    """One backend at one length: its verdict and, when it ran, its medians."""

    seq: int
    backend: Backend
    status: str  # ok | not_eligible | oom | error | skipped | pending
    reason: str = ""
    gpu_us: float | None = None  # GPU/call median; None on the CPU
    eager_us: float | None = None  # eager/call median
    peak_mib: float | None = None  # extra device memory of one call (None on the CPU)
    tflops: float | None = None
    kernel_us: float | None = None
    main_kernel: str | None = None  # short name
    kv_seq: int | None = None
    error: float | None = None  # the output's max |out - ref| / max |ref| against float64 MATH
    grad_error: float | None = None  # the worst of dq, dk, dv's (fwd+bwd), same measure
    nonfinite: tuple[str, ...] = ()  # which of out, dq, dk, dv held NaN or Inf
    gpu_spread: tuple[float, float] | None = None  # GPU/call's 10th and 90th percentiles over the point's samples
    eager_spread: tuple[float, float] | None = None  # eager/call's

    @property
    def ran(self) -> bool:
        return self.status == OK

    @property
    def time_us(self) -> float | None:
        """The reference clock: GPU/call, or eager/call where there is no GPU clock (the CPU)."""
        if not self.ran:
            return None
        return self.gpu_us if self.gpu_us is not None else self.eager_us

    @property
    def status_text(self) -> str:
        """``ok``, ``out of memory: needed 2.00 GiB more``, ``skipped: OOM at 8192``, ..."""
        labels: dict[str, str] = {NOT_ELIGIBLE: "not eligible", OOM: "out of memory"}
        label = labels.get(self.status, self.status)
        if self.status == OOM and self.reason.startswith("out of memory"):
            return self.reason
        return f"{label}: {self.reason}" if self.reason else label

    def to_dict(self) -> dict:
        d = asdict(self)
        d["backend"] = self.backend.value
        d["nonfinite"] = list(self.nonfinite)
        return d

    @classmethod
    def from_row(cls, seq: int, row: BackendRow, kv_seq: int | None = None) -> "SweepPoint":
        """The point of one comparison row (``Session.rows()``) measured at ``seq``."""
        if not row.enabled:
            return cls(seq, row.backend, SKIPPED, "not measured (flag off)", kv_seq=kv_seq)
        if row.status == Status.WAITING:  # the length's time was up before the engine's verdict: not a failure
            return cls(seq, row.backend, SKIPPED, "time was up before its verdict", kv_seq=kv_seq)
        status = row.status if row.status in (OK, NOT_ELIGIBLE, OOM, ERROR) else ERROR
        reason = row.reason
        ran = status == OK
        return cls(
            seq=seq,
            backend=row.backend,
            status=status,
            reason=reason,
            gpu_us=row.gpu_us.median if ran and row.gpu_us else None,
            eager_us=row.eager_us.median if ran and row.eager_us else None,
            peak_mib=row.peak_mib if ran else None,
            tflops=row.tflops if ran else None,
            kernel_us=row.kernel_us.median if ran and row.kernel_us else None,
            main_kernel=row.main_kernel if ran else None,
            kv_seq=kv_seq,
            error=row.max_rel_error if ran else None,
            grad_error=max(row.grad_max_rel) if ran and row.grad_max_rel else None,
            nonfinite=tuple(row.nonfinite) if ran else (),
            gpu_spread=_spread(row.gpu_us) if ran else None,
            eager_spread=_spread(row.eager_us) if ran else None,
        )


def _spread(summary: Summary | None) -> tuple[float, float] | None:
    if summary is None or summary.p10 is None:
        return None
    return (summary.p10, summary.p90)


class Sweep:
    """The state of a sweep while it runs: the points so far and which backends are still measured.

    With ``stop_after_oom`` (the default) a backend that ran out of memory or failed at length N
    is not measured at longer lengths (its points read ``skipped: OOM at N``), and the sweep
    stops after a length at which no backend ran.
    """

    def __init__(
        self,
        workloads: Sequence[Workload],
        enabled: Sequence[Backend],
        stop_after_oom: bool = True,
    ) -> None:
        if not workloads:
            raise ValueError("a sweep needs at least one length")
        self.workloads = list(workloads)
        self.enabled = tuple(b for b in ALL_BACKENDS if b in enabled)
        self.stop_after_oom = stop_after_oom
        self.measured: list[list[SweepPoint]] = []
        self.failed: dict[Backend, str] = {}  # backend -> "OOM at 4096" / "error at 4096"
        self.stopped = ""  # why the sweep ended before its last length ("" while it goes on)
        self.skip_reason = ""  # what the points of the lengths left read
        self.not_fastest: dict[int, tuple[Backend, tuple[Faster, ...]]] = {}  # seq -> (SDPA's pick, who beat it)
        self.picks: dict[int, Backend] = {}  # seq -> SDPA's pick there, where it was known

    def note_faster(self, seq: int, pick: Backend | None, faster: tuple[Faster, ...]) -> None:
        """Record which backends beat SDPA's pick at ``seq`` (Session.faster()); nothing when none did."""
        if pick is None:
            return
        self.picks[seq] = pick
        if faster:
            self.not_fastest[seq] = (pick, faster)

    def not_fastest_dicts(self) -> list[dict]:
        """The JSON of :attr:`not_fastest`, in increasing length."""
        return [
            {"seq": seq, "pick": pick.value, "faster": [f.to_dict() for f in faster]}
            for seq, (pick, faster) in sorted(self.not_fastest.items())
        ]

    @property
    def seqs(self) -> list[int]:
        return [w.seq for w in self.workloads]

    @property
    def done(self) -> bool:
        return bool(self.stopped) or len(self.measured) >= len(self.workloads)

    def active(self) -> tuple[Backend, ...]:
        """The backends to measure at the next length (empty when the sweep is over)."""
        if self.done:
            return ()
        return tuple(b for b in self.enabled if b not in self.failed)

    def add(self, rows: Iterable[BackendRow]) -> list[SweepPoint]:
        """Record the comparison rows measured at the next length; return its points."""
        if self.done:
            raise ValueError("the sweep is over: no length is left to record")
        workload = self.workloads[len(self.measured)]
        by_backend = {r.backend: r for r in rows}
        extra = [b for b, r in by_backend.items() if r.enabled and b not in self.enabled]
        if extra:  # e.g. the legacy API left cuDNN on: it was measured, so it is shown
            self.enabled = tuple(b for b in ALL_BACKENDS if b in self.enabled or b in extra)
        points = []
        for backend in self.enabled:
            row = by_backend.get(backend)
            if backend in self.failed:
                point = SweepPoint(workload.seq, backend, SKIPPED, self.failed[backend], kv_seq=workload.kv_seq)
            elif row is None:
                point = SweepPoint(workload.seq, backend, SKIPPED, "not measured", kv_seq=workload.kv_seq)
            else:
                point = SweepPoint.from_row(workload.seq, row, workload.kv_seq)
            points.append(point)
        self.measured.append(points)
        if self.stop_after_oom:
            for p in points:
                if p.status in (OOM, ERROR):
                    self.failed[p.backend] = f"{'OOM' if p.status == OOM else 'error'} at {p.seq}"
            if not any(p.ran for p in points) and not self.done:
                self.stopped = (
                    f"stopped after seq {workload.seq}: no backend ran there "
                    "(each was out of memory, not eligible, failed or skipped)"
                )
                self.skip_reason = f"sweep stopped after seq {workload.seq}"
        return points

    def abort(self, reason: str) -> None:
        """End the sweep early (the engine failed): the lengths left are skipped with ``reason``."""
        if not self.done:
            self.stopped = reason
            self.skip_reason = f"not measured: {reason}"

    def points(self) -> list[SweepPoint]:
        """Every (length, backend) of the sweep: measured, skipped with the reason, or (while the sweep runs)
        pending."""
        out = [p for points in self.measured for p in points]
        for workload in self.workloads[len(self.measured):]:
            for backend in self.enabled:
                if backend in self.failed or self.done:
                    reason = self.failed.get(backend) or self.skip_reason or "not measured"
                    out.append(SweepPoint(workload.seq, backend, SKIPPED, reason, kv_seq=workload.kv_seq))
                else:
                    out.append(SweepPoint(workload.seq, backend, PENDING, "not measured yet", kv_seq=workload.kv_seq))
        return out


def clock_of(points: Iterable[SweepPoint]) -> str:
    """``GPU/call`` when any point has a GPU clock, else ``eager/call`` (the CPU)."""
    return "GPU/call" if any(p.ran and p.gpu_us is not None for p in points) else "eager/call"
