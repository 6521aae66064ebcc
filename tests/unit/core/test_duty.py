"""The engine's duty cycle: its measured device time over wall time, beside NVML's reading."""

from __future__ import annotations

import pytest

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.lab.duty import BusyWindow
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.records import Sample
from sdpa_tui.core.workload import Workload


def test_no_slices_no_share():
    assert BusyWindow().share() is None


def test_share_is_busy_time_over_wall_time_in_the_window():
    window = BusyWindow(window_s=5.0)
    # a 26 ms Math call and a 26 ms graph replay every 0.25 s: about a fifth of the time busy
    for i in range(1, 41):
        window.add(1000.0 + 0.25 * i, 0.052)
    assert window.share() == pytest.approx(20 * 0.052 / 5.0)


def test_the_window_starts_where_the_first_slice_did():
    window = BusyWindow(window_s=5.0)
    window.add(100.0, 0.5)  # busy from 99.5 to 100.0
    window.add(101.0, 0.5)
    assert window.share() == pytest.approx(1.0 / 1.5)


def test_old_slices_leave_the_window_and_the_share_is_capped():
    window = BusyWindow(window_s=1.0)
    window.add(10.0, 0.9)
    for i in range(1, 5):
        window.add(10.0 + i, 0.1)
    assert window.share() == pytest.approx(0.1)
    window.add(14.5, 5.0)
    assert window.share() == 1.0


def test_the_session_adds_up_the_engines_busy_time():
    session = Session(Workload(), (Backend.MATH,))
    cid = session.next_config_id()
    assert session.engine_busy.share() is None
    session.apply(Sample(cid, Backend.MATH, 26_000.0, 26_500.0, "graph", 1, 1000.0, busy_s=0.052))
    session.apply(Sample(cid, Backend.MATH, 26_000.0, 26_500.0, "graph", 1, 1000.25, busy_s=0.052))
    session.apply(Sample(cid, Backend.MATH, 26_000.0, 26_500.0, "graph", 1, 1000.5))  # an engine that does not say
    assert session.engine_busy.share() == pytest.approx(0.104 / 0.302)
