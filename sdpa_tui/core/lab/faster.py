"""Whether SDPA's pick is the fastest backend here, and if not, which ones beat it and how to get them.

Pure: no torch, no Textual. The input is one :class:`~.stats.Summary` per backend on the clock
that matters (GPU/call on a GPU; eager/call where there is no GPU clock). A backend *beats* the
pick only when the gap is beyond the noise of both windows:

- each window holds at least :data:`MIN_SAMPLES` values, and
- the spreads do not overlap: the backend's 90th percentile lies below the pick's 10th, and
- the backend's median is at least :data:`ENTER_RATIO` times faster than the pick's.

A claim, once made, is kept while the backend's median stays below the pick's 10th percentile
and at least :data:`KEEP_RATIO` times faster (a Schmitt trigger): numbers that hover at the
edge do not make the verdict flicker between redraws. :class:`FasterTracker` holds that state;
evaluating it twice on the same numbers gives the same answer, so how often a view redraws does
not matter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..backends import Backend
from ..stats import Summary
from ..units import us_number

MIN_SAMPLES = 5
"""Values each window needs before a claim is made; ``report`` and ``sweep`` wait for as many (engine.headless)."""

ENTER_RATIO = 1.05
"""A backend must be at least 5 % faster (median against median) to be named."""

KEEP_RATIO = 1.02
"""A backend already named stays named while it is at least 2 % faster."""

CLOCK_LABEL = {"gpu": "GPU/call", "eager": "eager"}
"""The clocks a verdict is made on, as the JSON (``clocks`` keys) and the screen name them."""


@dataclass(frozen=True)
class Faster:
    """One backend that beats SDPA's pick on ``clock``: ``ratio`` = pick median / its median."""

    backend: Backend
    clock: str  # "gpu" | "eager"
    ratio: float
    pick_median: float
    median: float

    def to_dict(self) -> dict:
        return {
            "backend": self.backend.value,
            "clock": self.clock,
            "ratio": self.ratio,
            "pick_median": self.pick_median,
            "median": self.median,
        }


def beats(candidate: Summary, pick: Summary, already_named: bool = False) -> bool:
    """Whether ``candidate`` is faster than ``pick`` beyond the noise of both (see the module doc)."""
    if candidate.count < MIN_SAMPLES or pick.count < MIN_SAMPLES or pick.p10 is None:
        return False
    if candidate.median <= 0:
        return False
    ratio = pick.median / candidate.median
    if already_named:
        return candidate.median < pick.p10 and ratio >= KEEP_RATIO
    return candidate.p90 < pick.p10 and ratio >= ENTER_RATIO


def undecided(candidate: Summary, pick: Summary) -> bool:
    """Whether more samples could still name ``candidate``: its median is :data:`ENTER_RATIO` faster than the
    pick's, but the spreads overlap, so :func:`beats` says no for now. With few samples the 10th and 90th percentiles
    sit near the extremes, and one sample slowed by a busy machine decides; more samples place them where most
    values are."""
    if candidate.count < MIN_SAMPLES or pick.count < MIN_SAMPLES or candidate.median <= 0:
        return False
    return pick.median / candidate.median >= ENTER_RATIO and not beats(candidate, pick)


def faster_than_pick(
    pick: Backend,
    summaries: Mapping[Backend, Summary | None],
    clock: str,
    already_named: Iterable[Backend] = (),
) -> tuple[Faster, ...]:
    """The backends of ``summaries`` (eligible, enabled, measured) that beat ``pick``, fastest first.

    ``summaries`` holds the pick too; a backend missing from it, or with no summary, is not judged.
    """
    pick_summary = summaries.get(pick)
    if pick_summary is None:
        return ()
    named = set(already_named)
    found = [
        Faster(backend, clock, pick_summary.median / s.median, pick_summary.median, s.median)
        for backend, s in summaries.items()
        if backend != pick and s is not None and beats(s, pick_summary, backend in named)
    ]
    return tuple(sorted(found, key=lambda f: f.median))


class FasterTracker:
    """The verdict with hysteresis: which backends are named for one (workload, pick, clock)."""

    def __init__(self) -> None:
        self._key: object = None
        self._named: frozenset[Backend] = frozenset()

    def update(
        self, key: object, pick: Backend, summaries: Mapping[Backend, Summary | None], clock: str
    ) -> tuple[Faster, ...]:
        """The verdict for these numbers; ``key`` changing (new workload, flags, pick) starts afresh."""
        if key != self._key:
            self._key, self._named = key, frozenset()
        result = faster_than_pick(pick, summaries, clock, self._named)
        self._named = frozenset(f.backend for f in result)
        return result


def _enum(backend: Backend) -> str:
    return f"SDPBackend.{backend.value}"


def how_to(faster: Sequence[Faster], pick: Backend, enabled_in_order: Sequence[Backend]) -> tuple[str, str]:
    """Two ways to get the fastest backend with ``torch.nn.attention.sdpa_kernel``.

    The first allows only it (SDPA then raises where it cannot run another workload); the second
    keeps every enabled backend as a fallback, the faster ones first (``set_priority=True``).
    ``enabled_in_order``: the enabled backends in the priority order SDPA used.
    """
    if not faster:
        return "", ""
    only = f"with sdpa_kernel([{_enum(faster[0].backend)}]):"
    first = [f.backend for f in faster]
    rest = [b for b in enabled_in_order if b not in first]
    if pick not in first and pick not in rest:
        rest.append(pick)
    order = ", ".join(_enum(b) for b in first + rest)
    return only, f"with sdpa_kernel([{order}], set_priority=True):"


def describe(f: Faster, pick: Backend) -> str:
    """``cuDNN is 1.39x faster than SDPA's pick Flash on GPU/call (9.6 vs 13.4 µs)``."""
    return (
        f"{f.backend.label} is {f.ratio:.2f}x faster than SDPA's pick {pick.label} on "
        f"{CLOCK_LABEL.get(f.clock, f.clock)} ({us_number(f.median)} vs {us_number(f.pick_median)} µs)"
    )


