"""What keeps the engine's host memory flat over hours (docs/faults.md, benchmarks/engine_memory.py)."""

from __future__ import annotations

import gc

import torch
from torch.profiler import profile

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.records import Configure
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine import profiling
from sdpa_tui.engine.runner import next_profile_interval


def test_a_burst_leaves_no_profiler_for_the_collector_to_find():
    # torch.profiler.profile sits in a reference cycle holding the whole Kineto result; the
    # automatic collector is off here, so only the burst's own collection can free it.
    gc.collect()
    gc.disable()
    try:
        result = profiling.burst(lambda: torch.ones(64) * 2, torch.device("cpu"), 3)
        alive = [o for o in gc.get_objects() if isinstance(o, profile)]
    finally:
        gc.enable()
    assert result.trace["traceEvents"], "the burst still returns its trace"
    assert alive == []


def intervals(config: Configure, n: int) -> list[float]:
    out, interval = [], 0.0
    for _ in range(n):
        interval = next_profile_interval(interval, config)
        out.append(interval)
    return out


def test_bursts_back_off_while_the_workload_stays_the_same():
    config = Configure(1, Workload(), (Backend.MATH,), profile_every_s=5.0, profile_every_max_s=60.0)
    assert intervals(config, 7) == [5.0, 10.0, 20.0, 40.0, 60.0, 60.0, 60.0]


def test_without_a_maximum_bursts_keep_their_interval():
    assert intervals(Configure(1, Workload(), (Backend.MATH,), profile_every_s=1.0), 3) == [1.0, 1.0, 1.0]
