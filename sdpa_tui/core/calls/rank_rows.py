"""A distributed job's calls per rank: which ranks made a signature, each rank's count and time, and
whether a rank stands out (another backend, or a kernel time off the others': a throttled GPU, another path).

Plain data, no torch. A process's rank comes with its state (``ProcessState.rank``: RANK, or
torch.distributed's own); processes of no rank (a single-process program, a launcher) have none.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from ..stats import Summary
from .call_signature import CallSignature
from .watched_calls import CallStats, ProcessState

RANK_TIME_TOLERANCE = (0.10, 2.0)
"""A rank's median kernel time stands out when it is off the ranks' median by more than max(10 %, 2 µs)."""
MIN_SAMPLES = 3


@dataclass(frozen=True)
class RankCell:
    count: int
    kernel_us: Summary | None
    backend: str | None
    devices: tuple[str, ...]
    host_us: Summary | None = None  # CPU runs: the host's clock

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "backend": self.backend, "devices": list(self.devices),
                "kernel_us": _summary(self.kernel_us), "host_us": _summary(self.host_us)}


def _summary(s: Summary | None) -> dict[str, Any]:
    return {"median": round(s.median, 3), "p90": round(s.p90, 3), "n": s.count} if s else \
        {"median": None, "p90": None, "n": 0}


def merge_key(signature: CallSignature, state: ProcessState) -> CallSignature:
    """Ranks on different GPUs make one row: a rank's device is kept in its cell, not in the key."""
    if state.rank is None:
        return signature
    return replace(signature, device=signature.device.split(":")[0])


def per_rank(items: Iterable[tuple[ProcessState, CallStats]]) -> dict[int, RankCell]:
    found: dict[int, list[CallStats]] = {}
    for state, stats in items:
        if state.rank is not None:
            found.setdefault(state.rank, []).append(stats)
    return {rank: RankCell(
        count=sum(st.count for st in stats), kernel_us=Summary.of(x for st in stats for x in st.kernel_us),
        backend=next((st.backend for st in stats if st.backend), None),
        devices=tuple(sorted({st.signature.device for st in stats})),
        host_us=Summary.of(x for st in stats for x in st.host_us),
    ) for rank, stats in sorted(found.items())}


def rank_note(cells: dict[int, RankCell]) -> str:
    """One line when a rank ran another backend or its kernel time is off the others'; "" when none does."""
    if len(cells) < 2:
        return ""
    notes = []
    backends = {rank: c.backend for rank, c in cells.items() if c.backend}
    if len(set(backends.values())) > 1:
        common = statistics.mode(backends.values())
        odd = ", ".join(f"rank {r} ran {b}" for r, b in backends.items() if b != common)
        notes.append(f"{odd} (the others {common})")
    timed = {rank: c.kernel_us.median for rank, c in cells.items() if c.kernel_us and c.kernel_us.count >= MIN_SAMPLES}
    if len(timed) >= 2:
        middle = statistics.median(timed.values())
        limit = max(RANK_TIME_TOLERANCE[0] * middle, RANK_TIME_TOLERANCE[1])
        off = [f"rank {r} {us:.1f} µs" for r, us in timed.items() if abs(us - middle) > limit]
        if off:
            notes.append(f"kernel time off the ranks' median {middle:.1f} µs: {', '.join(off)}")
    return "; ".join(notes)
