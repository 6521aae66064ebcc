"""Device memory of one call, read from the caching allocator's statistics."""

from __future__ import annotations

from collections.abc import Callable

import torch


def peak_extra_bytes(step: Callable[[], object], device: torch.device) -> int | None:
    """Device memory one call needs beyond what was allocated before it (None on the CPU)."""
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    result = step()
    torch.cuda.synchronize(device)
    del result
    return torch.cuda.max_memory_allocated(device) - before
