"""Every watched process's latest state as it arrives on a :class:`StateListener`, and the report built from them.

What ``sdpa-tui watch`` keeps of the program it runs (``watch/program/watched_program.py``), what ``--attach`` keeps
of a process that watches itself (``watch/program/attached_processes.py``), and what a block of the Python API
(``watch/from_python/watching.py``) keeps of its own process and the children it starts: one place that merges them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ...core.calls.watched_calls import ProcessState
from .contention import ContendedCalls
from .state_socket import StateListener

if TYPE_CHECKING:
    from ...core.calls.watch_report import WatchReport


def seen_note(start: str) -> str:
    """What watch sees and what it cannot; ``start``: when the watching began, in words ("the program started")."""
    return (
        "calls made through torch.nn.functional.scaled_dot_product_attention looked up at call time are "
        "counted and inspected; nn.MultiheadAttention's and nn.TransformerEncoderLayer's fast paths (eval, "
        "autograd off), which run SDPA inside C++, and calls on nested tensors are counted apart (uninspected); "
        f"not seen at all: names bound "
        f"before {start}, torch.ops.aten.scaled_dot_product_attention and the _scaled_dot_product_* "
        "ops called directly, C++ extensions, and those fast paths inside a compiled graph; every Python process "
        f"the program starts is watched (fork, spawn, subprocess, torchrun)"
    )


class CollectedStates:
    """``program_pids()``: the processes the host's contention is read beside (the program's own, before any of them
    has sent a state); ``forward``: also hears each state (``--attach``'s publisher)."""

    def __init__(self, program_pids: Callable[[], Iterable[int]] = tuple,
                 forward: Callable[[ProcessState], None] | None = None) -> None:
        self._states: dict[int, ProcessState] = {}
        self._lock = threading.Lock()
        self._program_pids = program_pids
        self._forward = forward
        self.contended = ContendedCalls()
        self.listener: StateListener | None = None

    def listen(self, address: str | None = None) -> StateListener:
        """Listen at ``address`` (``--attach``'s), or on a new socket of its own; OSError where it cannot."""
        self.listener = StateListener(self.note, address)
        return self.listener

    def note(self, state: ProcessState) -> None:
        with self._lock:
            self._states[state.pid] = state
            self.contended.note(state, [*self._states, *self._program_pids()])
        if self._forward is not None:
            self._forward(state)

    def states(self) -> list[ProcessState]:
        with self._lock:
            return list(self._states.values())

    def all_final(self) -> bool:
        """Has every process that sent a state sent its last (and one at least)?"""
        states = self.states()
        return bool(states) and all(s.final for s in states)

    def report(self, program: list[str], exit_code: int | None, duration_s: float, start: str,
               notes: Iterable[str] = (), states: Iterable[ProcessState] | None = None) -> WatchReport:
        """The report of the states collected (or of ``states``): ``notes``, then the listener's errors and what
        was seen since ``start`` (:func:`seen_note`)."""
        # imported at the first report, not at watch's start (which the program's start waits for)
        from ...core.calls.watch_report import build_report

        errors = self.listener.errors[:3] if self.listener else []
        report = build_report(program, exit_code, self.states() if states is None else states, duration_s,
                              [*notes, *errors, seen_note(start)])
        with self._lock:
            report.contention = self.contended.now if exit_code is None else ""
            report.contention_seen = self.contended.seen
        return report

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()
