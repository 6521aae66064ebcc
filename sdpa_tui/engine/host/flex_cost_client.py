"""The host side of ``engine/costs/flex_cost.py``: FlexAttention measured at many lab workloads in one child process
(torch is imported and Inductor warmed once), each answer or the reason it has none."""

from __future__ import annotations

from collections.abc import Sequence

from ...core.calls.flex_alternative import FlexCost, FlexSpec
from .child_json import ask


def measure_flex(specs: Sequence[FlexSpec], timeout_s: float) -> list[tuple[FlexCost | None, str]]:
    """One (cost, "") or (None, why not) per spec, in order."""
    if not specs:
        return []
    answers, why = ask("sdpa_tui.engine.costs.flex_cost", {"specs": [s.to_dict() for s in specs]}, timeout_s)
    out: list[tuple[FlexCost | None, str]] = []
    for i in range(len(specs)):
        if i >= len(answers):
            out.append((None, why or "the measuring process gave no answer"))
        elif "cost" in answers[i]:
            out.append((FlexCost.from_dict(answers[i]["cost"]), ""))
        else:
            out.append((None, str(answers[i].get("error") or "no answer")))
    return out
