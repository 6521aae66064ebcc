"""The host side of ``engine/costs/compiled_cost.py``: runs it in a child process (torch lives there) and reads its answer."""

from __future__ import annotations

from ...core.calls.compiled_twins import CompiledCost, CostSpec
from .child_json import ask


def measure_compiled(spec: CostSpec, timeout_s: float) -> tuple[CompiledCost | None, str]:
    """The compiled call alone against the eager one, or None and why not."""
    answers, why = ask("sdpa_tui.engine.costs.compiled_cost", spec.to_dict(), timeout_s)
    if why or not answers:
        return None, why
    try:
        return CompiledCost.from_dict(answers[-1]), ""
    except (ValueError, TypeError, KeyError) as exc:
        return None, f"unreadable answer: {exc}"
