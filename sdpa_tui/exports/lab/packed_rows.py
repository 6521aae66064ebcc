"""Packed attention in ``report``'s table: a padded workload's (``--lengths``, ``--padding``) real tokens run alone by
``varlen_attn`` and by SDPA on jagged nested tensors, the packing and unpacking included, as rows below SDPA's
backends, named as alternatives (they are no SDPA backend), and one line each against SDPA's pick, judged by the same
noise rule as the backends on the clock watch's advice holds them to (on a GPU: faster on GPU/call and on the eager
clock, the smaller saving said; their host time can be many times their GPU time). The clocks time the
code's every-call part; its once-per-batch part (the mask's indices and lengths, read on the host) is said apart,
with the calls on one mask from which the per-call saving pays for it (a model's layers share one mask)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...core.calls.advice import leaving_sdpa
from ...core.calls.packed_alternative import LABELS, VARIANTS, PackedCost
from ...core.lab.faster import CLOCK_LABEL, beats
from ...core.lab.session import BackendRow, Session
from ...core.stats import Summary
from ...core.status import Status
from ...core.units import us_number
from .report_data import fmt_error, fmt_num

SHORT = {name: f"{variant} (alt)" for name, variant in VARIANTS.items()}


@dataclass(frozen=True)
class PackedRow:
    """One packed alternative at the workload: its cost, or why it has none."""

    name: str
    cost: PackedCost | None
    why: str = ""

    @property
    def label(self) -> str:
        return f"alternative: {LABELS[self.name]}"

    def summary(self, clock: str) -> Summary | None:
        if self.cost is None:
            return None
        return Summary.of(self.cost.gpu_us if clock == "gpu" else self.cost.eager_us)

    def cells(self) -> dict[str, str]:
        """The table's cells by column (``report_tables.COLUMNS``), "–" where the column is SDPA's alone."""
        c = self.cost
        gpu, eager = self.summary("gpu"), self.summary("eager")
        return {"backend": self.name, "status": "ok" if c else f"not run: {self.why}", "main kernel": "–",
                "kernels/call": "–", "kernel µs": us_number(c.kernel_us) if c else "–",
                "GPU/call µs": us_number(gpu.median) if gpu else "–",
                "eager/call µs": us_number(eager.median) if eager else "–", "vs MATH": "–", "TFLOP/s": "–",
                "% of peak": "–", "peak MiB": fmt_num(c.peak_mib, 1) if c else "–",
                "max rel err": fmt_error(c.error) if c else "–", "best at": ""}

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "label": LABELS[self.name], "cost": self.cost.to_dict() if self.cost else None,
                "why": self.why or None}


def packed_rows(answer: dict[str, tuple[PackedCost | None, str]]) -> list[PackedRow]:
    return [PackedRow(name, cost, why) for name, (cost, why) in answer.items()]


def _pick(session: Session) -> BackendRow | None:
    choice = session.dispatch.choice if session.dispatch else None
    return next((r for r in session.rows() if r.backend is choice and r.status == Status.OK), None)


@dataclass(frozen=True)
class Versus:
    """An alternative against SDPA's pick on the clock both have."""

    clock: str
    ours: Summary
    theirs: Summary
    pick: BackendRow

    @property
    def faster(self) -> bool:
        return beats(self.ours, self.theirs)

    @property
    def saving_us(self) -> float:
        return self.theirs.median - self.ours.median


def versus(session: Session, row: PackedRow) -> Versus | None:
    """``row`` against SDPA's pick on the clock watch's advice would hold it to (``advice.leaving_sdpa``: on a GPU,
    faster on both clocks, the smaller saving said), or None where either did not run."""
    pick = _pick(session)
    if pick is None or row.cost is None:
        return None
    if pick.gpu_us:
        ours, theirs, clock = leaving_sdpa(row.summary("gpu"), row.summary("eager"), pick.gpu_us, pick.eager_us)
    else:
        ours, theirs, clock = row.summary("eager"), pick.eager_us, "eager"
    return None if ours is None or theirs is None else Versus(clock, ours, theirs, pick)


def packed_lines(session: Session, rows: Sequence[PackedRow]) -> list[str]:
    """Each alternative against SDPA's pick: faster beyond noise by how much, or not; or why it did not run."""
    lines = []
    for row in rows:
        if row.cost is None:
            lines.append(f"{LABELS[row.name]} not run: {row.why}")
            continue
        v = versus(session, row)
        if v is None:
            lines.append(f"{LABELS[row.name]}: SDPA's pick did not run here, nothing to hold it against")
            continue
        clock, ours, theirs, pick = v.clock, v.ours, v.theirs, v.pick
        against = (f"{us_number(ours.median)} µs {CLOCK_LABEL[clock]} against SDPA's pick ({pick.backend.label}) "
                   f"{us_number(theirs.median)} µs, packing and unpacking included")
        if v.faster:
            lines.append(f"{LABELS[row.name]} is faster: {against}: saves {us_number(v.saving_us)} "
                         f"µs a call ({theirs.median / ours.median:.2f}x){batch_part(row.cost, v.saving_us)}")
        else:
            lines.append(f"{LABELS[row.name]} is not faster beyond noise: {against}{batch_part(row.cost, None)}")
    return lines


def batch_part(cost: PackedCost, saving_us: float | None) -> str:
    """The once-per-batch part's cost and, for a code faster per call, the calls on one mask that pay for it."""
    batch_us = cost.batch_us
    if batch_us is None:
        return ""
    said = f"; once per batch, {us_number(batch_us)} µs to read the mask's real tokens"
    if saving_us is None or saving_us <= 0:
        return said
    return said + f": paid back from {math.ceil(batch_us / saving_us):,} call(s) on one mask (a model's layers share it)"
