"""soak.py's sample log: the samples go to a file as they are taken (kept in the measured UI process, they grew its
RSS) and come back whole; the heap reading says what Python and malloc hold."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.paths import BENCHMARKS

sys.path.insert(0, str(BENCHMARKS / "soak"))

from soak_rows import HEAP_SERIES, RowLog, heap_reading, memory_reading, pymalloc_reading, rss_split  # noqa: E402


def test_samples_come_back_in_order_and_whole():
    log = RowLog.temporary()
    rows = [{"elapsed_s": 10.0 * i, "ui_rss_mib": 45.0 + i / 3, "profiler_pids": [i], "workload": "B1 H2"}
            for i in range(5)]
    for row in rows:
        log.append(row)
    assert (log.count, log.last_elapsed_s) == (5, 40.0)
    log.close()
    assert log.rows() == rows
    log.path.unlink()


def test_every_series_is_read():
    assert set(memory_reading()) == set(HEAP_SERIES)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_the_rss_split_adds_up_to_the_rss():
    rss = next(int(line.split()[1]) / 1024 for line in Path("/proc/self/status").read_text().splitlines()
               if line.startswith("VmRSS:"))
    split = rss_split()
    assert 0 < split["ui_rss_anon_mib"] < rss and 0 < split["ui_rss_file_mib"] < rss
    assert split["ui_rss_anon_mib"] + split["ui_rss_file_mib"] <= rss + 0.01


def test_pymalloc_arenas_hold_what_python_keeps():
    before = pymalloc_reading()
    kept = [[i] for i in range(200_000)]  # small objects: pymalloc's
    after = pymalloc_reading()
    assert after["ui_pymalloc_used_mib"] - before["ui_pymalloc_used_mib"] > 5
    assert after["ui_pymalloc_arenas_mib"] >= after["ui_pymalloc_used_mib"]
    del kept


def test_the_heap_reading_grows_with_what_python_keeps():
    before = heap_reading()
    kept = [object() for _ in range(50_000)]
    after = heap_reading()
    assert after["ui_py_blocks_k"] - before["ui_py_blocks_k"] >= 45
    if sys.platform == "linux" and before["ui_malloc_used_mib"] is not None:  # glibc
        assert after["ui_malloc_held_mib"] >= after["ui_malloc_used_mib"] > 0
    del kept
