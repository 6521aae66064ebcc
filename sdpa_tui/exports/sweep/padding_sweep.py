"""``sweep --padding``: SDPA's pick on a padded batch against packed attention at each padding fraction, and where
packing starts to pay (the smallest fraction from which on ``varlen_attn`` is faster beyond noise at every fraction
measured). Rich table and JSON; the measuring is ``commands/sweep.py``'s."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ...core.calls.packed_alternative import LABELS, NESTED, VARLEN
from ...core.lab.faster import CLOCK_LABEL
from ...core.lab.session import Session
from ...core.padded_lengths import describe
from ...core.units import us_number
from ..lab.packed_rows import PackedRow, Versus, versus


@dataclass(frozen=True)
class PaddingPoint:
    """One fraction: the SDPA session on its lengths and the packed rows measured there."""

    padding: float
    session: Session
    packed: tuple[PackedRow, ...]

    def against(self, name: str) -> Versus | None:
        row = next((r for r in self.packed if r.name == name), None)
        return None if row is None else versus(self.session, row)


def pays_from(points: Sequence[PaddingPoint], name: str = VARLEN) -> float | None:
    """The smallest padding from which on ``name`` beat SDPA's pick at every fraction measured, or None."""
    found = None
    for point in sorted(points, key=lambda p: p.padding, reverse=True):
        v = point.against(name)
        if v is None or not v.faster:
            break
        found = point.padding
    return found


def finding(points: Sequence[PaddingPoint]) -> str:
    start = pays_from(points)
    if start is None:
        return f"{LABELS[VARLEN]} was not faster than SDPA's pick beyond noise at the highest padding measured"
    return f"packing pays from {start:.0%} padding on: {LABELS[VARLEN]} is faster than SDPA's pick beyond noise there"


def _cell(v: Versus | None, row: PackedRow | None) -> str:
    if v is None:
        return "not run" if row is None or row.cost is None else "–"
    return f"{us_number(v.ours.median)}{'' if v.clock == 'gpu' else ' e'}{' *' if v.faster else ''}"


def _batch_cell(row: PackedRow | None) -> str:
    batch_us = row.cost.batch_us if row is not None and row.cost is not None else None
    return "–" if batch_us is None else us_number(batch_us)


def padding_table(points: Sequence[PaddingPoint]) -> Group:
    base = points[0].session.workload if points else None
    title = ("packed attention against SDPA's pick on a padded batch · medians per call, µs (e: eager clock; "
             "*: faster beyond noise); once/batch: varlen's once-per-batch part, which the layers on one mask share")
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ("padding", "lengths", "SDPA's pick", "pick µs", "varlen", "nested", "varlen saves", "once/batch"):
        table.add_column(name, justify="left" if name in ("lengths", "SDPA's pick") else "right", no_wrap=True)
    for p in points:
        w = p.session.workload
        v, n = p.against(VARLEN), p.against(NESTED)
        rows = {r.name: r for r in p.packed}
        pick = v or n
        table.add_row(f"{p.padding:.0%}", describe(w.lengths, w.kv_seq, 4).split(" (")[0].removeprefix("lengths "),
                      pick.pick.backend.label if pick else "–",
                      f"{us_number(pick.theirs.median)} {CLOCK_LABEL[pick.clock]}" if pick else "–",
                      _cell(v, rows.get(VARLEN)), _cell(n, rows.get(NESTED)),
                      us_number(v.saving_us) if v else "–", _batch_cell(rows.get(VARLEN)))
    lines: list = [table, Text(finding(points))]
    for p in points:
        lines += [Text(f"{p.padding:.0%}: {LABELS[r.name]} not run: {r.why}", style="dim") for r in p.packed
                  if r.cost is None]
    if base is not None:
        lines.insert(0, Text(f"{base.describe().split(' lengths')[0]}", style="bold"))
    return Group(*lines)


def padding_dict(points: Sequence[PaddingPoint]) -> dict[str, Any]:
    def one(p: PaddingPoint) -> dict[str, Any]:
        out: dict[str, Any] = {"padding": p.padding, "lengths": list(p.session.workload.lengths),
                               "packed": [r.to_dict() for r in p.packed]}
        for name in (VARLEN, NESTED):
            v = p.against(name)
            out[name] = None if v is None else {"clock": v.clock, "us": v.ours.median, "pick": v.pick.backend.value,
                                                "pick_us": v.theirs.median, "faster": v.faster,
                                                "saving_us": v.saving_us}
        return out

    return {"points": [one(p) for p in points], "pays_from": pays_from(points)}
