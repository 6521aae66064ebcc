"""A backend's history stays bounded however long the monitor runs, and still spans the whole session."""

from __future__ import annotations

from sdpa_tui.core.lab.history_ring import HistoryRing


def test_bounded_the_newest_at_full_resolution_the_oldest_kept_thinned():
    ring: HistoryRing[int] = HistoryRing(recent=100, tail_max=50, tail_every=4)
    for i in range(100_000):
        ring.append(i)
    rows = list(ring)
    assert len(ring) == len(rows) <= 150
    assert rows == sorted(rows), "oldest first"
    assert rows[-100:] == list(range(99_900, 100_000)), "the newest 100 at full resolution"
    assert rows[0] == 0, "the session's first sample is still there"
    tail = rows[:-100]
    gaps = {b - a for a, b in zip(tail, tail[1:])}
    assert len(gaps) == 1, f"the older part is evenly thinned: {sorted(gaps)[:5]}"
    assert rows[-100] - tail[-1] <= gaps.pop(), "and reaches up to the full-resolution part"
    assert list(reversed(ring)) == rows[::-1] and ring[-1] == 99_999 and ring[0] == 0
    assert ring.thinned


def test_short_sessions_keep_everything():
    ring: HistoryRing[int] = HistoryRing(recent=100)
    for i in range(80):
        ring.append(i)
    assert list(ring) == list(range(80)) and not ring.thinned


def test_the_bound_is_reached_after_recent_plus_tail_samples_and_kept():
    ring: HistoryRing[int] = HistoryRing(recent=100, tail_max=50)
    lengths = []
    for i in range(10_000):
        ring.append(i)
        lengths.append(len(ring))
    assert lengths[149] == 150, "full at recent + tail_max samples: every sample kept until then"
    assert max(lengths) == 150 and min(lengths[150:]) >= 100, "then bounded, the recent part always whole"
    assert list(ring)[0] == 0 and list(ring)[-1] == 9_999
