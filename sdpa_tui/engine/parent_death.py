"""An engine process (the engine, its profiler process) never outlives the process that started it."""

from __future__ import annotations

import ctypes
import signal


def die_with_parent() -> None:
    """Linux: get SIGTERM when the parent dies, even by SIGKILL (no orphan holding the GPU)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
