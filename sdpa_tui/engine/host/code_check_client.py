"""The host side of ``engine/costs/code_check.py``: every code a run's advice would offer, run against its call in one
child process (torch imported once), each answer or the reason it has none."""

from __future__ import annotations

from collections.abc import Sequence

from ...core.calls.call_code import CodeCheck, CodesToCheck
from .child_json import ask


def check_codes(calls: Sequence[CodesToCheck], timeout_s: float) -> list[dict[str, CodeCheck]]:
    """For each call, in order, each of its codes by name: matched, or why it is not offered (a call the child
    could not answer: that reason, for each of its codes)."""
    if not calls:
        return []
    answers, why = ask("sdpa_tui.engine.costs.code_check", {"calls": [c.to_dict() for c in calls]}, timeout_s)
    out = []
    for i, call in enumerate(calls):
        answer = answers[i] if i < len(answers) else {}
        missing = f"not run against the call: {why or 'the checking process gave no answer'}; not offered"
        out.append({c.name: CodeCheck(answer[c.name]["matched"]) if "matched" in answer.get(c.name, {})
                    else CodeCheck(None, str(answer.get(c.name, {}).get("error") or missing)) for c in call.codes})
    return out
