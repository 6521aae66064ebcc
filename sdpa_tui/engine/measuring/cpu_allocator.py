"""The allocator regime the engine's measuring processes run in: glibc's thresholds fixed where its own adjustment
ends, from each process's start, so that the timing engine and the profiler process time the same call alike.

Math on the CPU allocates its scores and their softmax anew at every call. glibc serves a block from memory the
process has already touched, or maps it anew (its first touch then page-faults it in), by two thresholds it moves
as a process frees memory; each process settles on its own. On the 2-core VM (2026-11-29, [2, 8, 512, 64] fp16, one
thread) the same Math call took about 27 or about 44 ms, and the live monitor read Math's eager clock at 1.55x its
kernel clock in one start and its kernel clock at 1.4x its eager clock in the next (Flash, which allocates little,
within 1.05x in both). With the thresholds fixed at the values glibc's adjustment reaches at most (blocks up to 32
MiB from the heap, up to 64 MiB of free heap kept) both processes run where that adjustment ends, from their start
(the two clocks then within 1.12x over three starts of the live monitor), and a block larger than that is mapped
anew at every call, as in any program with glibc's defaults: Math at [2, 8, 1024, 64] fp16 (scores above 32 MiB)
read 155 to 162 ms eager, a default process's own loop 166 and 170 ms (``docs/lab-notes/cpu-kernel-clock.md``).

Called first thing in the timing engine and the profiler process (before they import torch), and in the cost
processes before they measure. glibc only (``mallopt``); a user's own
``MALLOC_*`` or ``GLIBC_TUNABLES`` setting is left to rule.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
"""glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: its adjustment never raises the mmap threshold past it."""
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
"""What glibc's adjustment sets the trim threshold to beside that mmap threshold."""
USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")
REGIME = "heap to 32 MiB (glibc)"
"""How the report's header names the regime (``Environment.cpu_allocator``)."""
_regime: str | None = None


def settle_allocator() -> bool:
    """Fix glibc's thresholds for this process; False where that was not done (another C library, or the user's
    own setting)."""
    if any(name in os.environ for name in USER_SETTINGS) or "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): its own allocator, left alone
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    if not (mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)):
        return False
    global _regime
    _regime = REGIME
    return True


def regime() -> str | None:
    """The regime this process's calls are timed in, for its environment record; None: the C library's own."""
    return _regime
