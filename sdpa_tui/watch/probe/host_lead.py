"""How far ahead of the GPU the program's host is when it makes an SDPA call, read outside the profiler's windows.

The advice holds code that costs the host more than SDPA (packed attention) to GPU/call only where the host has that
much room (``core/calls/advice.host_room``). A profiled window reads the lead too, from its launch and kernel times,
but the profiler slows the host: in a transformers Llama's training forward on an H100 the profiled calls were
launched 1 to 2 µs ahead of the GPU, while the same program, unprofiled, saved 7.2 to 7.3 ms a step of 57.1 to
58.7 with packed code that costs the host 1.4 ms a call more than SDPA (``docs/lab-notes/packed-attention.md``).

So, in the calls after a window: a CUDA event recorded at the call's start, with the host's clock beside it, and read
once the GPU has passed it. GPU and host clocks meet at an anchor: an event recorded right after the window's stop,
which waited for the GPU, so the GPU runs it at once (a few µs late: the lead reads that much low). The clocks drift
apart (tens of µs a second), so leads are read only for :data:`FRESH_S` after an anchor.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from .kernels.profile_readings import Entry, keep_sample

FRESH_S = 5.0
"""Leads are read this long after an anchor (its drift stays under a few hundred µs)."""
PER_SIGNATURE = 16
"""At most this many calls of a signature are read per anchor."""
PENDING = 64


class LeadClock:
    """The anchor, and the calls whose events the GPU has not passed yet (calling threads; a lock is not needed: a
    list's append and a reassignment are atomic under the GIL, and a lost sample is only one sample)."""

    def __init__(self) -> None:
        self.anchor: tuple[int, Any, float] | None = None  # (device index, event, host seconds)
        self.read: dict[int, int] = {}  # signature index → calls read since the anchor
        self.pending: list[tuple[Entry, Any, float]] = []

    def anchor_now(self) -> None:
        """Right after a synchronize (a window's stop): the GPU is idle and runs this event at once."""
        try:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.anchor = (torch.cuda.current_device(), event, time.perf_counter())
            self.read = {}
        except Exception:  # noqa: BLE001 - no lead read: the advice falls back to its other rule
            self.anchor = None

    def sample(self, entry: Entry, device: torch.device) -> None:
        """At a CUDA call's start, before its kernels: an event, read later by :meth:`collect`."""
        anchor = self.anchor
        if (anchor is None or device.index != anchor[0] or time.perf_counter() - anchor[2] > FRESH_S
                or self.read.get(entry.index, 0) >= PER_SIGNATURE or len(self.pending) >= PENDING
                or torch.cuda.is_current_stream_capturing()):
            return
        try:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
        except Exception:  # noqa: BLE001 - the program's call goes on; this lead is not read
            return
        self.pending.append((entry, event, time.perf_counter()))
        self.read[entry.index] = self.read.get(entry.index, 0) + 1

    def collect(self) -> None:
        """The leads of the calls whose events the GPU has passed, into their signatures' ``lead_us``."""
        anchor = self.anchor
        if not self.pending or anchor is None:
            return
        _, start, host_s = anchor
        waiting = []
        try:
            for entry, event, at_s in self.pending:
                if not event.query():
                    waiting.append((entry, event, at_s))
                    continue
                gpu_s = host_s + start.elapsed_time(event) / 1e3
                keep_sample(entry.stats.lead_us, max(0.0, (gpu_s - at_s) * 1e6))
        except Exception:  # noqa: BLE001 - a CUDA error is the program's to see, at its own next call
            waiting = []
        self.pending = waiting
