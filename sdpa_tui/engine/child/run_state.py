"""The engine's small parts with no loop in them: a backend's run and its clocks, the burst interval, the
batch rule for configures, sticky CUDA errors, and fault injection."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from ...core.backends import Backend
from ...core.protocol.engine_commands import Configure
from ..measuring import clocks

_STICKY = ("illegal memory access", "device-side assert", "unspecified launch failure",
           "illegal instruction", "misaligned address", "CUDA error: an illegal")


FAULT_ENV = "SDPA_TUI_FAULT"
"""Fault injection for demonstrations and tests: ``device-assert`` makes the first timing slice
trigger a real device-side assert (a sticky CUDA error); ``exit`` makes the engine die; ``leak``
makes every slice keep 1 MiB of host memory for good (the growth ``--engine-memory-mib`` is for)."""

LEAK_MIB_PER_SLICE = 1
_leaked: list[bytearray] = []  # what ``leak`` keeps


def inject_fault(kind: str, device: torch.device) -> None:
    if kind == "exit":
        os._exit(9)
    if kind == "leak":
        _leaked.append(bytearray(LEAK_MIB_PER_SLICE << 20))  # zero-filled: resident at once
    if kind == "device-assert" and device.type == "cuda":
        table = torch.zeros(4, device=device)
        table[torch.tensor([1 << 20], device=device)] += 1  # out of bounds: the kernel asserts
        torch.cuda.synchronize(device)


CAPTURE_SPACING = 4.0
"""The next burst of a backend waits at least this many times what its last burst took: bursts take at most a
fifth of the engine's time, however slow a call or busy the machine (a burst is 3 warm-up and at least 3
profiled calls in the profiler process, while the engine waits)."""


def next_profile_interval(previous_s: float, config: Configure, capture_s: float = 0.0) -> float:
    """Seconds to the next burst of a backend: ``profile_every_s``, doubling after each burst up
    to ``profile_every_max_s`` when that is larger, and never less than ``CAPTURE_SPACING`` times
    ``capture_s``, what the last burst took. A workload's kernels do not change while it runs, and
    each burst is a pause in timing (the profiler process runs it while the engine waits)."""
    if previous_s <= 0 or config.profile_every_max_s <= config.profile_every_s:
        interval = config.profile_every_s
    else:
        interval = min(previous_s * 2, config.profile_every_max_s)
    return max(interval, CAPTURE_SPACING * capture_s)


def latest_configure_only(records: list[object]) -> list[object]:
    """Drop every Configure but the last of a batch: keys pressed while the engine was busy
    each sent one, and only the newest is still wanted (each costs a full set-up)."""
    last = max((i for i, r in enumerate(records) if isinstance(r, Configure)), default=-1)
    return [r for i, r in enumerate(records) if i == last or not isinstance(r, Configure)]


class StickyCudaError(RuntimeError):
    """An error that poisons the CUDA context: the process must exit."""


@dataclass
class BackendRun:
    """A backend that runs the current workload, with its clocks ready."""

    backend: Backend
    step: object
    per_call_us: float
    graph: clocks.GraphClock | None = None
    graph_due: bool = False  # CUDA: the graph is captured at the slice after the first number, which is eager
    next_profile: float = 0.0
    profile_interval_s: float = 0.0
    captured: bool = False  # had its first kernel capture (the peak waits for every backend's)
    last_sample: float = 0.0
    samples: int = 0
    peak_bytes: int | None = None

    @property
    def graph_waiting(self) -> bool:
        """It has its first (eager) number and its graph is still to capture: its next slice is due at once."""
        return self.graph_due and self.samples > 0

    def due_at(self, interval_s: float) -> float:
        """When its next slice is due (CLOCK_MONOTONIC): ``interval_s`` after its last sample, or at once when its
        graph waits (the GPU/call clock and the kernels' names wait for it)."""
        return 0.0 if self.graph_waiting else self.last_sample + interval_s


def check_sticky(device: torch.device, exc: BaseException) -> None:
    """Raise :class:`StickyCudaError` if ``exc`` poisoned the CUDA context."""
    text = str(exc)
    if device.type == "cuda" and any(marker in text for marker in _STICKY):
        raise StickyCudaError(text.splitlines()[0]) from exc
