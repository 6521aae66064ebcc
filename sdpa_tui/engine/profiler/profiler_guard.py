"""Count the profiler sessions this process starts. The timing engine must start none.

Every ``torch.profiler.profile`` and ``torch.autograd.profiler.profile`` session prepares and
enables the profiler through two functions of ``torch.autograd.profiler`` (emit_nvtx and
emit_itt enable it through the second). ``install`` wraps both to count their calls; nothing
else changes. The engine reports the count in ``EngineHealth``: kernel capture belongs to the
profiler process, and a CUDA graph replayed in a process where CUPTI was loaded keeps host
memory (docs/lab-notes/gpu-measurements.md).
"""

from __future__ import annotations

import functools
from typing import Any

import torch.autograd.profiler as autograd_profiler

_ENTRY_POINTS = ("_prepare_profiler", "_enable_profiler")
_starts = 0


def install() -> None:
    """Start counting (once per process)."""
    for name in _ENTRY_POINTS:
        original = getattr(autograd_profiler, name, None)
        if original is None or getattr(original, "_sdpa_tui_counted", False):
            continue

        @functools.wraps(original)
        def counted(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            global _starts
            _starts += 1
            return _original(*args, **kwargs)

        counted._sdpa_tui_counted = True  # type: ignore[attr-defined]
        setattr(autograd_profiler, name, counted)


def starts() -> int:
    """Calls to the profiler's prepare and enable entry points since ``install``."""
    return _starts
