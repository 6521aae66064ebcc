"""Formatting shared by the sweep's terminal table and its Markdown: times, memory, the title, the fastest.

No Rich here: plain strings, and the fastest backend at each length (which both tables mark).
"""

from __future__ import annotations

from ...core.backends import Backend
from ...core.sweep.sweep_points import SweepPoint, clock_of
from ...core.workload import Workload


def mib_cell(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


def describe_base(workload: Workload, kv_fixed: int | None) -> str:
    """``[2, 8, N, 64] fp16, causal``: the workload with the swept length as N."""
    return workload.describe(swept=True, kv_fixed=kv_fixed is not None)


def fastest_by_length(points: list[SweepPoint]) -> dict[int, Backend]:
    """The fastest backend at each length where at least two ran."""
    best: dict[int, list[tuple[float, Backend]]] = {}
    gpu = clock_of(points) == "GPU/call"
    for p in points:
        value = (p.gpu_us if gpu else p.eager_us) if p.ran else None
        if value is not None:
            best.setdefault(p.seq, []).append((value, p.backend))
    return {seq: min(v, key=lambda x: x[0])[1] for seq, v in best.items() if len(v) > 1}
