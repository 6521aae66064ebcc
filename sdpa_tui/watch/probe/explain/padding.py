"""A padded call's real lengths, read from its key-padding mask on sampled calls: the first call's, then every
``LENGTHS_EVERY``-th, at most ``MAX_BATCHES`` batches per signature (the lab replays one of them,
``core/padded_lengths.typical``). Each reading is one reduction and one copy to the host (on CUDA, a wait for the
GPU), so it is never made on the fast path's unsampled calls."""

from __future__ import annotations

import torch

from ....core.calls.mask_forms import CAUSAL_KEY_PADDING, KEY_PADDING
from ....core.calls.watched_calls import CallStats
from ....core.padded_lengths import histogram

LENGTHS_EVERY = 1024
"""A power of two, a multiple of the probe's ``TIME_EVERY``: these calls take its sampled path."""
MAX_BATCHES = 8


def due(count: int, stats: CallStats) -> bool:
    return (stats.mask_form in (KEY_PADDING, CAUSAL_KEY_PADDING) and len(stats.lengths) < MAX_BATCHES
            and (count == 1 or not count & (LENGTHS_EVERY - 1)))


def read_lengths(stats: CallStats, mask: torch.Tensor) -> None:
    """Add the call's lengths (kept keys per sequence, from its first head's last query row: every key padding does
    not hide, in a causal mask too) as a histogram; a mask of other than 4 dimensions is not read (it broadcasts
    over the batch)."""
    if mask is None or mask.dim() != 4:
        return
    try:
        with torch.no_grad():
            row = mask[:, 0, -1]
            keep = row if row.dtype == torch.bool else row == 0
            stats.lengths.append(histogram(keep.sum(-1).tolist()))
    except Exception:  # noqa: BLE001 - a mask this cannot read leaves no lengths; the program goes on
        return
