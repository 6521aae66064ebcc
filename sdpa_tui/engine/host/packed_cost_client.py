"""The host side of ``engine/costs/packed_cost.py``: packed attention (``varlen_attn``, nested jagged SDPA) measured
on many padded calls' lengths in one child process, each code's answer or the reason it has none."""

from __future__ import annotations

from collections.abc import Sequence

from ...core.calls.packed_alternative import PackedCost, PackedSpec
from .child_json import ask


def measure_packed(specs: Sequence[PackedSpec], timeout_s: float) -> list[dict[str, tuple[PackedCost | None, str]]]:
    """For each spec, in order, each of its codes by name: (cost, "") or (None, why not)."""
    if not specs:
        return []
    answers, why = ask("sdpa_tui.engine.costs.packed_cost", {"specs": [s.to_dict() for s in specs]}, timeout_s)
    out: list[dict[str, tuple[PackedCost | None, str]]] = []
    for i, spec in enumerate(specs):
        answer = answers[i] if i < len(answers) else {}
        missing = why or "the measuring process gave no answer"
        codes: dict[str, tuple[PackedCost | None, str]] = {}
        for name, _ in spec.codes:
            given = answer.get(name, {})
            codes[name] = ((PackedCost.from_dict(given["cost"]), "") if "cost" in given
                           else (None, str(given.get("error") or missing)))
        out.append(codes)
    return out
