"""What a sweep's points show, in plain language: the crossovers, the limits, and SDPA's pick.

Pure analysis: no torch, no Textual, no Rich. :func:`crossovers` reads the points of a
:class:`~.sweep_points.Sweep`; :func:`pick_findings` reads where SDPA's pick was not the fastest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..backends import ALL_BACKENDS, Backend
from ..lab.faster import CLOCK_LABEL
from ..units import us_number
from .sweep_points import ERROR, NOT_ELIGIBLE, OOM, PENDING, SKIPPED, Sweep, SweepPoint, clock_of

_SIZE = re.compile(r"(needed [\d.,]+ ?[KMGT]?i?B more|needs at least [\d.,]+ ?[KMGT]?i?B)")
"""How much memory an OOM reason says was wanted: torch's failed allocation, or the engine's
estimate for MATH (which is not launched when it clearly cannot fit)."""


def _pair(a: float, b: float) -> tuple[str, str]:
    """Two times formatted with enough digits that two different values never read the same."""
    for digits in (None, 1, 2, 3):
        x, y = (us_number(a), us_number(b)) if digits is None else (f"{a:,.{digits}f}", f"{b:,.{digits}f}")
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
            f"{CLOCK_LABEL.get(best.clock, best.clock)} ({us_number(best.median)} vs {us_number(best.pick_median)} µs); "
            f"sdpa_kernel([SDPBackend.{best.backend.value}])"
        )
    return lines


def crossovers(points: Sequence[SweepPoint]) -> list[str]:
    """Plain-language findings that the points show, and nothing else.

    In this order: which backend is fastest over which range of lengths (lengths where it is
    the only one that runs are said so); where two backends change places between two
    lengths at which both ran, beyond the spread of each point's samples (:func:`_overtakes`); the first length at which each backend ran out of
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

    def spread_of(seq: int, backend: Backend) -> tuple[float, float] | None:
        p = by[(seq, backend)]
        return p.gpu_spread if gpu else p.eager_spread

    lines: list[str] = []
    lines += _fastest(seqs, backends, time_of, clock)
    lines += _overtakes(seqs, backends, time_of, clock, spread_of)
    lines += _failures(seqs, backends, by)
    lines += _ineligible(seqs, backends, by)
    lines += accuracy_findings(seqs, backends, by)
    return lines


ERROR_JUMP = 10.0
"""An error this many times its value at the previous length measured is a jump worth saying."""


def accuracy_findings(seqs: Sequence[int], backends: Sequence[Backend], by: dict) -> list[str]:
    """Where along the sweep a backend's output or gradients turn non-finite, or its error jumps."""
    lines = []
    for b in backends:
        ran = [by[(seq, b)] for seq in seqs if (seq, b) in by and by[(seq, b)].ran]
        bad = next((p for p in ran if p.nonfinite), None)
        if bad is not None:
            lines.append(f"{b.label} holds NaN or Inf in {', '.join(bad.nonfinite)} from seq {bad.seq}")
        for what, attr in (("output error", "error"), ("gradient error", "grad_error")):
            for before, after in zip(ran, ran[1:]):
                a, c = getattr(before, attr), getattr(after, attr)
                if a and c and c >= ERROR_JUMP * a:
                    lines.append(f"{b.label}'s {what} jumps at seq {after.seq}: {c:.1e} against {a:.1e} at seq "
                                 f"{before.seq} (max |err| / max |ref| vs float64 MATH)")
                    break
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


def _overtakes(seqs, backends, time_of, clock, spread_of) -> list[str]:
    """Where two backends change places, beyond the spread of each point's samples: at a length where their
    spreads overlap neither is ahead; a length where the order flips and flips back at the next is one noisy point
    (a busy machine slows every sample of a point at once), not two crossovers."""
    found = []
    for i, a in enumerate(backends):
        for b in backends[i + 1:]:
            ahead = [(s, w) for s in seqs if (w := _ahead(s, a, b, time_of, spread_of)) is not None]
            ahead = [x for j, x in enumerate(ahead)
                     if not 0 < j < len(ahead) - 1 or x[1] in (ahead[j - 1][1], ahead[j + 1][1])
                     or ahead[j - 1][1] != ahead[j + 1][1]]
            for (s1, before), (s2, after) in zip(ahead, ahead[1:]):
                if before is after:
                    continue
                winner, loser = after, before
                now = _pair(time_of(s2, winner), time_of(s2, loser))
                then = _pair(time_of(s1, winner), time_of(s1, loser))
                found.append((s2, ALL_BACKENDS.index(winner), ALL_BACKENDS.index(loser),
                              f"{winner.label} overtakes {loser.label} at seq {s2} "
                              f"({clock} {now[0]} µs vs {now[1]} µs; at seq {s1}: {then[0]} µs vs {then[1]} µs)"))
    return [text for *_, text in sorted(found)]


def _ahead(seq, a, b, time_of, spread_of) -> Backend | None:
    """Which of ``a`` and ``b`` is faster at ``seq``: beyond both spreads (one's 90th percentile under the other's
    10th) where they were kept, else by the medians; None where both did not run, or neither is ahead."""
    ta, tb = time_of(seq, a), time_of(seq, b)
    if ta is None or tb is None or ta == tb:
        return None
    sa, sb = spread_of(seq, a), spread_of(seq, b)
    if sa is None or sb is None:
        return a if ta < tb else b
    return a if sa[1] < sb[0] else b if sb[1] < sa[0] else None


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
        judged = [s for s in seqs if by.get((s, b)) is not None and by[(s, b)].status not in (SKIPPED, PENDING)]
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
