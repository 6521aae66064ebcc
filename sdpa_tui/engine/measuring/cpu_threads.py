"""How many threads the engine's timing loops use on the CPU.

torch starts one intra-op thread per core. Each parallel call then waits for its slowest
thread, so on a small machine any other runnable task (the monitor's own UI, a build, another
job) stalls every call it lands on: on a 2-core machine shared with other work, headless
medians at [1, 2, 128, 32] fp16 (2026-11-23) swung from 0.8 to 8 ms between two runs with 2 threads, and
stayed within 1 % at 1 thread (benchmarks/monitor/live_vs_report.py). The engine therefore leaves one
core to the rest of the machine, for ``report`` and the live monitor alike, and the header
says how many threads it times with. ``OMP_NUM_THREADS`` set by the user wins.
"""

from __future__ import annotations

import os

import torch


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def timing_threads(cores: int, user_setting: str | None) -> int | None:
    """Threads to time with, or None to leave torch's choice (the user set OMP_NUM_THREADS)."""
    if user_setting:
        return None
    return max(1, cores - 1)


def leave_a_core() -> None:
    threads = timing_threads(available_cores(), os.environ.get("OMP_NUM_THREADS"))
    if threads is not None:
        torch.set_num_threads(threads)
