"""Which backend the engine times next, and what that slice does: pure functions of the runs' states, so that the
order is tested without a GPU (tests/unit/engine/test_slice_order.py).

The order (issue 39): a backend's first number is eager, on screen without a capture; its CUDA graph is captured at
its next slice, which goes before any other slice and before its own first kernel burst: the GPU/call clock and the
kernels' names (read from the graph's nodes) do not wait for the profiler process. The engine's set-up takes SDPA's
pick's graph right after its first number, before the other backends are set up (``measuring_loop``)."""

from __future__ import annotations

import enum
from collections.abc import Sequence

from .run_state import BackendRun


class SliceKind(enum.Enum):
    GRAPH = "capture the CUDA graph, then time the GPU/call and eager clocks"
    BURST = "a kernel burst in the profiler process (the engine waits)"
    TIMING = "time the clocks"


def slice_kind(run: BackendRun, now: float) -> SliceKind:
    """What ``run``'s slice does at ``now`` (CLOCK_MONOTONIC): a graph still to capture after its first number
    first, then a kernel burst when one is due (never before the first number), else timing."""
    if run.graph_waiting:
        return SliceKind.GRAPH
    if run.samples and now >= run.next_profile:
        return SliceKind.BURST
    return SliceKind.TIMING


def next_run(runs: Sequence[BackendRun], cursor: int, now: float, interval_s: float) -> int | None:
    """The index in ``runs`` of the run to slice now, or None when none is due: the first whose graph waits, counting
    from ``cursor``; else the first due from ``cursor`` on, so that each backend gets its turn."""
    order = [(cursor + i) % len(runs) for i in range(len(runs))] if runs else []
    waiting = [i for i in order if runs[i].graph_waiting]
    if waiting:
        return waiting[0]
    return next((i for i in order if now >= runs[i].due_at(interval_s)), None)
