"""A sweep over sequence lengths, as data: the lengths asked for, the points measured, the findings.

Pure analysis: no torch, no Textual, no Rich. ``sdpa-tui sweep`` measures each length with the
engine (``engine.headless.measure_series``), feeds each length's comparison rows to a
:class:`Sweep`, and prints what :func:`crossovers` finds in the points.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from .backends import ALL_BACKENDS, Backend
from .faster import CLOCK_LABEL, Faster
from .session import BackendRow
from .workload import LIMITS, Workload

OK = "ok"
NOT_ELIGIBLE = "not_eligible"
OOM = "oom"
ERROR = "error"
SKIPPED = "skipped"
"""Point statuses: the engine's verdicts, plus ``skipped`` for a length the sweep did not measure."""

MAX_POINTS = 64
"""More lengths than this in one sweep is a typo (a range of powers of two has at most 21)."""

_SIZE = re.compile(r"(needed [\d.,]+ ?[KMGT]?i?B more|needs at least [\d.,]+ ?[KMGT]?i?B)")
"""How much memory an OOM reason says was wanted: torch's failed allocation, or the engine's
estimate for MATH (which is not launched when it clearly cannot fit)."""


# ------------------------------------------------------------------ the lengths asked for
def parse_seqs(text: str) -> tuple[int, ...]:
    """``"128,256,512"`` or ``"256:32768"`` (powers of two from A to B inclusive), or both mixed.

    Returns the lengths in increasing order without repeats. Raises ``ValueError`` with a
    message that names what is wrong and what is allowed.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError("--seq is empty: give lengths (--seq 128,256,512) or a range (--seq 256:32768)")
    seqs: set[int] = set()
    for item in (part.strip() for part in text.split(",")):
        if not item:
            raise ValueError(f"--seq {text!r} has an empty item: separate lengths with single commas")
        if ":" in item:
            seqs.update(_power_range(item))
        else:
            seqs.add(_length(item, item))
    if len(seqs) > MAX_POINTS:
        raise ValueError(f"--seq {text!r} gives {len(seqs)} lengths; at most {MAX_POINTS} in one sweep")
    return tuple(sorted(seqs))


def _length(word: str, item: str) -> int:
    limit = LIMITS["seq"]
    try:
        value = int(word.strip().replace("_", ""))
    except ValueError:
        raise ValueError(f"--seq {item!r}: {word.strip()!r} is not a whole number") from None
    if not 1 <= value <= limit:
        raise ValueError(f"--seq {item!r}: lengths must be from 1 to {limit:,}, got {value:,}")
    return value


def _power_range(item: str) -> list[int]:
    parts = item.split(":")
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        raise ValueError(f"--seq {item!r}: a range is A:B, both ends given, e.g. 256:32768")
    low, high = (_length(p, item) for p in parts)
    for end in (low, high):
        if end & (end - 1):
            raise ValueError(
                f"--seq {item!r}: a range steps over powers of two, so both ends must be powers of two "
                f"({end:,} is not); list other lengths with commas, e.g. --seq 384,768,1536"
            )
    if low > high:
        raise ValueError(f"--seq {item!r}: the range goes down; write the shorter length first ({high}:{low})")
    return [1 << k for k in range(low.bit_length() - 1, high.bit_length())]


def sweep_workloads(base: Workload, seqs: Sequence[int], kv_seq: int | None = None) -> list[Workload]:
    """The workload at each length: ``base`` with ``seq`` set, and ``kv_seq`` following it unless fixed.

    Raises :class:`~.workload.WorkloadError` naming the length whose workload is invalid.
    """
    out = []
    for seq in seqs:
        try:
            out.append(base.with_changes(seq=seq, kv_seq=kv_seq if kv_seq is not None else seq))
        except ValueError as exc:
            raise type(exc)(f"at seq {seq:,}: {exc}") from None
    return out


# ------------------------------------------------------------------ the points measured
@dataclass(frozen=True)
class SweepPoint:
    """One backend at one length: its verdict and, when it ran, its medians."""

    seq: int
    backend: Backend
    status: str  # ok | not_eligible | oom | error | skipped
    reason: str = ""
    gpu_us: float | None = None  # GPU/call median; None on the CPU
    eager_us: float | None = None  # eager/call median
    peak_mib: float | None = None  # extra device memory of one call (None on the CPU)
    tflops: float | None = None
    kernel_us: float | None = None
    main_kernel: str | None = None  # short name
    kv_seq: int | None = None

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
        label = {NOT_ELIGIBLE: "not eligible", OOM: "out of memory"}.get(self.status, self.status)
        if self.status == OOM and self.reason.startswith("out of memory"):
            return self.reason
        return f"{label}: {self.reason}" if self.reason else label

    def to_dict(self) -> dict:
        d = asdict(self)
        d["backend"] = self.backend.value
        return d

    @classmethod
    def from_row(cls, seq: int, row: BackendRow, kv_seq: int | None = None) -> "SweepPoint":
        """The point of one comparison row (``Session.rows()``) measured at ``seq``."""
        if not row.enabled:
            return cls(seq, row.backend, SKIPPED, "not measured (flag off)", kv_seq=kv_seq)
        status = row.status if row.status in (OK, NOT_ELIGIBLE, OOM, ERROR) else ERROR
        reason = row.reason if row.status != "waiting" else "no verdict from the engine"
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
        )


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
        """Every (length, backend) of the sweep: measured, or skipped with the reason."""
        out = [p for points in self.measured for p in points]
        for workload in self.workloads[len(self.measured):]:
            for backend in self.enabled:
                reason = self.failed.get(backend) or self.skip_reason or "not measured"
                out.append(SweepPoint(workload.seq, backend, SKIPPED, reason, kv_seq=workload.kv_seq))
        return out


# ------------------------------------------------------------------ the findings
def fmt_us(value: float) -> str:
    """Microseconds as the findings print them: 9.6, 27.3, 210, 30,654."""
    return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


def _pair(a: float, b: float) -> tuple[str, str]:
    """Two times formatted with enough digits that two different values never read the same."""
    for digits in (None, 1, 2, 3):
        x, y = (fmt_us(a), fmt_us(b)) if digits is None else (f"{a:,.{digits}f}", f"{b:,.{digits}f}")
        if x != y or a == b:
            return x, y
    return x, y


def _ratio(value: float) -> str:
    return f"{value:.2f}x" if value < 10 else f"{value:.0f}x"


def _span(seqs: Sequence[int]) -> str:
    return f"at seq {seqs[0]}" if len(seqs) == 1 else f"from seq {seqs[0]} to {seqs[-1]}"


def _runs(seqs: Sequence[int], members: set[int]) -> list[list[int]]:
    """Maximal runs of consecutive sweep lengths that are all in ``members``."""
    runs: list[list[int]] = []
    previous_in = False
    for s in seqs:
        if s in members:
            if previous_in:
                runs[-1].append(s)
            else:
                runs.append([s])
        previous_in = s in members
    return runs


def _runs_text(runs: list[list[int]]) -> str:
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs)


def pick_findings(sweep: Sweep) -> list[str]:
    """Where SDPA's pick is not the fastest, beyond the noise: one line naming the lengths, one per length."""
    if not sweep.not_fastest:
        if sweep.picks:
            return ["SDPA's pick is the fastest, or within the noise of the fastest, at every length measured"]
        return []
    seqs = sorted(sweep.not_fastest)
    lines = [f"SDPA's pick is not the fastest at seq {_runs_text(_runs(sweep.seqs, set(seqs)))}"]
    for seq in seqs:
        pick, faster = sweep.not_fastest[seq]
        best = faster[0]
        lines.append(
            f"at {seq}: {best.backend.label} is {best.ratio:.2f}x faster than SDPA's pick {pick.label} on "
            f"{CLOCK_LABEL.get(best.clock, best.clock)} ({fmt_us(best.median)} vs {fmt_us(best.pick_median)} µs); "
            f"sdpa_kernel([SDPBackend.{best.backend.value}])"
        )
    return lines


def clock_of(points: Iterable[SweepPoint]) -> str:
    """``GPU/call`` when any point has a GPU clock, else ``eager/call`` (the CPU)."""
    return "GPU/call" if any(p.ran and p.gpu_us is not None for p in points) else "eager/call"


def crossovers(points: Sequence[SweepPoint]) -> list[str]:
    """Plain-language findings that the points show, and nothing else.

    In this order: which backend is fastest over which range of lengths (lengths where it is
    the only one that runs are said so); where two backends change places between two
    neighbouring lengths at which both ran; the first length at which each backend ran out of
    memory or failed; the lengths at which a backend was not eligible. Times are on the GPU/call
    clock, or eager/call on the CPU.
    """
    points = list(points)
    if not points:
        return []
    clock = clock_of(points)
    gpu = clock == "GPU/call"
    seqs = sorted({p.seq for p in points})
    backends = [b for b in ALL_BACKENDS if any(p.backend == b for p in points)]
    by = {(p.seq, p.backend): p for p in points}

    def time_of(seq: int, backend: Backend) -> float | None:
        p = by.get((seq, backend))
        if p is None or not p.ran:
            return None
        value = p.gpu_us if gpu else p.eager_us
        return value if value is not None and value > 0 else None

    lines: list[str] = []
    lines += _fastest(seqs, backends, time_of, clock)
    lines += _overtakes(seqs, backends, time_of, clock)
    lines += _failures(seqs, backends, by)
    lines += _ineligible(seqs, backends, by)
    return lines


def _fastest(seqs, backends, time_of, clock) -> list[str]:
    """One line per run of lengths with the same fastest backend."""
    runs: list[dict] = []
    previous = None
    for seq in seqs:
        timed = sorted((t, b.value, b) for b in backends if (t := time_of(seq, b)) is not None)
        if not timed:
            previous = None
            continue
        fastest, alone = timed[0][2], len(timed) == 1
        margin = timed[1][0] / timed[0][0] if not alone else None
        key = (fastest, alone)
        if previous == key:
            runs[-1]["seqs"].append(seq)
            runs[-1]["margins"].append(margin)
            runs[-1]["detail"] = None
        else:
            runs.append({"backend": fastest, "alone": alone, "seqs": [seq], "margins": [margin],
                         "detail": (timed[0][0], timed[1][0], timed[1][2]) if not alone else None})
        previous = key
    lines = []
    for run in runs:
        label, span = run["backend"].label, _span(run["seqs"])
        if run["alone"]:
            if len(backends) > 1:
                lines.append(f"{label} is the only backend that runs {span}")
            continue
        if run["detail"]:
            best, second, other = run["detail"]
            a, b = _pair(best, second)
            lines.append(f"{label} is fastest {span} ({clock} {a} µs vs {b} µs for {other.label})")
        else:
            low, high = min(run["margins"]), max(run["margins"])
            margin = _ratio(low) if _ratio(low) == _ratio(high) else f"{_ratio(low)}–{_ratio(high)}"
            lines.append(f"{label} is fastest {span}, {margin} ahead of the next fastest ({clock})")
    return lines


def _overtakes(seqs, backends, time_of, clock) -> list[str]:
    """Where two backends change places between neighbouring lengths at which both ran."""
    found = []
    for i, a in enumerate(backends):
        for b in backends[i + 1:]:
            common = [s for s in seqs if time_of(s, a) is not None and time_of(s, b) is not None]
            for s1, s2 in zip(common, common[1:]):
                before = time_of(s1, a) - time_of(s1, b)
                after = time_of(s2, a) - time_of(s2, b)
                if before == 0 or after == 0 or (before > 0) == (after > 0):
                    continue
                winner, loser = (a, b) if after < 0 else (b, a)
                now = _pair(time_of(s2, winner), time_of(s2, loser))
                then = _pair(time_of(s1, winner), time_of(s1, loser))
                found.append((s2, ALL_BACKENDS.index(winner), ALL_BACKENDS.index(loser),
                              f"{winner.label} overtakes {loser.label} at seq {s2} "
                              f"({clock} {now[0]} µs vs {now[1]} µs; at seq {s1}: {then[0]} µs vs {then[1]} µs)"))
    return [text for *_, text in sorted(found)]


def _failures(seqs, backends, by) -> list[str]:
    """The first length at which each backend ran out of memory or failed."""
    lines = []
    first: dict[Backend, SweepPoint] = {}
    for b in backends:
        for s in seqs:
            p = by.get((s, b))
            if p is not None and p.status in (OOM, ERROR):
                first[b] = p
                break
    # the inputs themselves did not fit: every backend measured there says so; one line for all
    inputs_oom: dict[int, list[SweepPoint]] = {}
    for b, p in first.items():
        if p.status == OOM and p.reason.startswith("inputs"):
            inputs_oom.setdefault(p.seq, []).append(p)
    for seq, pts in sorted(inputs_oom.items()):
        size = _SIZE.search(pts[0].reason)
        need = f" ({size.group(1)})" if size else ""
        lines.append(f"At seq {seq} the inputs themselves do not fit in memory{need}: no backend runs there")
    for b in backends:
        p = first.get(b)
        if p is None or (p.status == OOM and p.reason.startswith("inputs")):
            continue
        ran_before = [s for s in seqs if s < p.seq and by.get((s, b)) is not None and by[(s, b)].ran]
        last = f"last ran at seq {ran_before[-1]}" if ran_before else ""
        if p.status == OOM:
            size = _SIZE.search(p.reason)
            detail = "; ".join(x for x in (size.group(1) if size else "", last) if x)
            lines.append(f"{b.label} runs out of memory at seq {p.seq}" + (f" ({detail})" if detail else ""))
        else:
            lines.append(f"{b.label} fails at seq {p.seq}: {p.reason or 'error'}" + (f" ({last})" if last else ""))
    return lines


def _ineligible(seqs, backends, by) -> list[str]:
    lines = []
    for b in backends:
        judged = [s for s in seqs if by.get((s, b)) is not None and by[(s, b)].status != SKIPPED]
        refused = [s for s in judged if by[(s, b)].status == NOT_ELIGIBLE]
        if not refused:
            continue
        reason = by[(refused[0], b)].reason
        suffix = f": {reason}" if reason else ""
        if refused == judged:
            lines.append(f"{b.label} is not eligible at any length measured{suffix}")
        else:
            lines.append(f"{b.label} is not eligible at seq {_runs_text(_runs(seqs, set(refused)))}{suffix}")
    return lines


def log_position(value: float, low: float, high: float, steps: int) -> int:
    """Where ``value`` falls on a log scale from ``low`` (0) to ``high`` (``steps``), rounded."""
    if steps <= 0 or high <= low:
        return 0
    frac = (math.log(value) - math.log(low)) / (math.log(high) - math.log(low))
    return max(0, min(steps, round(frac * steps)))
