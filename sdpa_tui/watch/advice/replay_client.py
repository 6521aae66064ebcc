"""The host side of ``watch/probe/checks/replay.py``: saved calls replayed through every backend in one child process (torch is
imported there, never here), each folder's answer or why it has none."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ...core.calls.gradient_check import BackendReplay
from ...core.calls.watch_report import WatchReport
from ...engine.host.child_json import ask

TIMEOUT_PER_FOLDER_S = 120.0


@dataclass(frozen=True)
class ReplayAnswer:
    """One folder's replays, or ``error`` (``bad_input``: the folder is not a saved call)."""

    folder: str
    replays: tuple[BackendReplay, ...] = ()
    backend: str = ""  # the backend the call ran in the program
    device: str = ""
    note: str = ""
    shapes: dict[str, list[int]] = field(default_factory=dict)
    dtype: str = ""
    error: str = ""
    bad_input: bool = False


def replay_saved_calls(folders: Sequence[str]) -> list[ReplayAnswer]:
    """One answer per folder, in order."""
    if not folders:
        return []
    answers, why = ask("sdpa_tui.watch.probe.checks.replay", {"folders": list(folders)}, TIMEOUT_PER_FOLDER_S * len(folders))
    out = []
    for i, folder in enumerate(folders):
        a = answers[i] if i < len(answers) else {"error": why or "the replaying process gave no answer"}
        out.append(ReplayAnswer(
            folder, tuple(BackendReplay.from_dict(r) for r in a.get("replays", ())), str(a.get("backend") or ""),
            str(a.get("device") or ""), str(a.get("note") or ""), dict(a.get("shapes") or {}), str(a.get("dtype") or ""),
            str(a.get("error") or ""), bool(a.get("bad_input"))))
    return out


def replay_flagged(report: WatchReport, say: Callable[[str], None]) -> None:
    """Each signature whose gradients were flagged and saved: its call replayed through every backend, the
    results put on its gradient check (where the report, the Calls view and the advice read them)."""
    checks = [c for row in report.rows if row.check and (c := row.check.backward) and c.repro and c.ok is False]
    if not checks:
        return
    say(f"sdpa-tui watch: replaying {len(checks)} flagged call(s) through every backend, forward and backward")
    for check, answer in zip(checks, replay_saved_calls([c.repro for c in checks])):
        if answer.error:
            check.note = check.note or f"not replayed: {answer.error}"
        check.replays = list(answer.replays)
