"""soak.py's sample log: the samples go to a file as they are taken (kept in the measured UI process, they grew its
RSS) and come back whole; the heap reading says what Python and malloc hold."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from soak_rows import HEAP_SERIES, RowLog, heap_reading  # noqa: E402


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


def test_the_heap_reading_grows_with_what_python_keeps():
    before = heap_reading()
    assert set(before) == set(HEAP_SERIES)
    kept = [object() for _ in range(50_000)]
    after = heap_reading()
    assert after["ui_py_blocks_k"] - before["ui_py_blocks_k"] >= 45
    if sys.platform == "linux" and before["ui_malloc_used_mib"] is not None:  # glibc
        assert after["ui_malloc_held_mib"] >= after["ui_malloc_used_mib"] > 0
    del kept
