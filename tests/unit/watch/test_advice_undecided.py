"""The advice's lab measures on while a backend is faster by the medians but its spread still overlaps the call's
backend's (``core.faster.undecided``): with five samples the percentiles sit near the extremes, and on a busy
machine a couple of slowed samples hid a 3x gain (watch gave no advice in a CI run beside a soak)."""

from __future__ import annotations

import time

import pytest
from support.lab_sessions import lab

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.calls.advice import advise, undecided_backends
from sdpa_tui.core.protocol.records import Sample
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.host.headless import measure_series

pytestmark = pytest.mark.torch_range

# Flash 2.5x faster by the medians; two of its five samples slowed by a neighbour reach into MATH's spread
SLOWED_FLASH = [40.0, 41, 39, 95, 110]
MATH = [100.0, 101, 99, 100, 102, 98]
LONGEST_S = 10.0


def test_a_faster_median_with_overlapping_spreads_is_undecided_and_more_samples_decide_it():
    session = lab({Backend.MATH: MATH, Backend.FLASH: SLOWED_FLASH})
    assert advise(session, "MATH").best is None
    assert undecided_backends(session, "MATH") == ["FLASH_ATTENTION"]
    for v in [40.0, 41, 39, 40, 42, 38, 40, 41, 39, 40, 41, 40, 39, 40, 41]:
        session.apply(Sample(0, Backend.FLASH, None, v, "none", 10, 0.0))
    assert undecided_backends(session, "MATH") == []
    assert advise(session, "MATH").best.backend == "FLASH_ATTENTION"


def test_no_wait_where_the_medians_are_within_five_percent_or_the_backend_is_refused():
    close = lab({Backend.MATH: MATH, Backend.FLASH: [97.0, 107, 88, 101, 93, 99]})
    assert undecided_backends(close, "MATH") == []
    slowed = lab({Backend.MATH: MATH, Backend.FLASH: SLOWED_FLASH})
    assert undecided_backends(slowed, "MATH", {"FLASH_ATTENTION": "dropout is not supported"}) == []
    assert undecided_backends(slowed, "CUDNN_ATTENTION") == []  # the call's backend did not run in the lab


def test_a_series_measures_on_until_settled_or_its_longest():
    """A real engine on the CPU: the first workload is held until MATH has 8 samples (more than the usual 5), the
    second, never settled, until ``longest_s`` past its complete numbers. Both are asked, however long the first
    numbers took (a loaded 2-core machine once took over 20 s for the first workload's, profiler start included,
    and the series moved on without asking)."""
    workloads = [Workload(batch=1, heads=2, kv_heads=2, seq=64, kv_seq=64, head_dim=32, dtype="fp32")] * 2
    asked: list[int] = []

    def settled(index: int, session) -> bool:
        asked.append(index)
        return index == 0 and len(session.backends[Backend.MATH].eager) >= 8

    sessions, yielded_at = [], []
    for session in measure_series(workloads, (Backend.MATH, Backend.FLASH), device="cpu", duration_s=0.1,
                                  timeout_s=120, settled=settled, longest_s=LONGEST_S):
        yielded_at.append(time.monotonic())
        sessions.append(session)
    assert len(sessions) == 2 and set(asked) == {0, 1}
    assert len(sessions[0].backends[Backend.MATH].eager) >= 8
    assert yielded_at[1] - yielded_at[0] >= LONGEST_S
