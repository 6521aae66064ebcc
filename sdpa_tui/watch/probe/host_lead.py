"""How far ahead of the GPU the program's host is when it makes an SDPA call, read outside the profiler's windows.

The advice holds code that costs the host more than SDPA (packed attention) to what the program would save with it
(``core/calls/host_pace.py``), replayed on the leads of a batch's calls. A profiled window reads the lead too, from
its launch and kernel times, but the profiler slows the host: in a transformers Llama's training forward on an H100
the profiled calls were launched 1 to 2 µs ahead of the GPU, while the same program, unprofiled, saved 7.2 to 7.3 ms
a step of 57.1 to 58.7 with packed code that costs the host 1.4 ms a call more than SDPA
(``docs/lab-notes/packed-attention.md``).

So, after a window: a CUDA event recorded at each call's start, with the host's clock beside it, and read once the
GPU has passed it; for a training call, one more at its backward's start (a hook on its output's gradient, on
autograd's thread). GPU and host clocks meet at an anchor, right after the window's stop (which waited for the GPU):
a few events, each polled without a pause until the host sees the GPU pass it, the earliest meeting kept
(:func:`meet_clocks`). Not the host's clock when the event is recorded: on a GPU shared with another process the event
waits for the other's time slice (on an H200 beside a neighbour busy half the time, about 0.4 ms), and every lead
then read that much low. The clocks drift apart (tens of µs a second), so leads are read only for :data:`FRESH_S`
after an anchor.

A call with a mask is read by batch: the calls on one mask (transformers gives each layer a view of one mask built
per forward) are one batch, in order. The batch of the first call after the anchor is not read: it is the one the
window stopped in, its host held back by the stop's wait. The next :data:`BATCHES` are read whole, every call of the
signature taking the slow path meanwhile (``Entry.leads_due``). A call without a mask has no batch: its first
:data:`PER_SIGNATURE` calls after the anchor are read, for the report alone. No lead is read inside a window.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from ...core.calls.host_pace import BatchLeads
from .kernels.profile_readings import Entry, keep_sample

FRESH_S = 5.0
"""Leads are read this long after an anchor (its drift stays under a few hundred µs)."""
PER_SIGNATURE = 16
"""At most this many calls of a signature without a mask are read per anchor."""
SKIP_BATCHES = 1
"""Batches met after an anchor that are not read: the first, the one the window stopped in."""
BATCHES = 3
"""Batches of a signature read whole per anchor, after those skipped."""
KEPT_BATCHES = 8
"""Batches kept per signature (the last ones read)."""
MAX_POSITIONS = 512
"""Calls on one mask beyond this many are not read (a mask reused for a whole run is not a batch)."""
PENDING = 2048
ANCHOR_EVENTS = 4
"""Events an anchor polls; the earliest meeting of the clocks is kept (a poll can be late, never early)."""
ANCHOR_WAIT_S = 0.05
"""An anchor whose events the GPU has not passed by then is given up: no lead is read until the next window."""


def meet_clocks(events: int = ANCHOR_EVENTS, wait_s: float = ANCHOR_WAIT_S) -> tuple[Any, float] | None:
    """An event the GPU has passed and the host's clock then, or None where the GPU did not get to it within
    ``wait_s``. Each of ``events`` events is recorded and polled without a pause: the host sees the GPU pass it at
    most a poll late, so each one's meeting (the host's clock when seen, less the GPU's time since the first) is at
    or after the first event's true host time, and the least of them is kept."""
    deadline = time.perf_counter() + wait_s
    first, host_s = None, 0.0
    for _ in range(events):
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        while not event.query():
            if time.perf_counter() > deadline:
                return None
        seen = time.perf_counter()
        if first is None:
            first, host_s = event, seen
        else:
            host_s = min(host_s, seen - first.elapsed_time(event) / 1e3)
    return first, host_s


@dataclass
class BatchReading:
    """One batch being read: each call's lead by its position on the mask, and each backward's, as the GPU passes
    their events; ``closed`` once the next batch has started."""

    entry: Entry
    forward: list[float | None] = field(default_factory=list)
    backward: list[float | None] = field(default_factory=list)
    closed: bool = False

    def put(self, phase: str, position: int, lead: float) -> None:
        leads = self.forward if phase == "forward" else self.backward
        leads.extend([None] * (position + 1 - len(leads)))
        leads[position] = lead


@dataclass
class SignatureReading:
    """Where a signature's calls are since the anchor: its last mask, the position of the last call on it, the
    batches started, and the one being read."""

    mask: Any = None  # a weak reference to the last call's mask (its base, for a view)
    position: int = -1
    started: int = 0
    reading: BatchReading | None = None
    flat: int = 0  # calls without a mask read


@dataclass(frozen=True)
class Read:
    """A call whose lead is being read in a batch: what its backward's event needs."""

    reading: BatchReading
    position: int


class LeadClock:
    """The anchor, the batches being read, and the calls whose events the GPU has not passed yet."""

    def __init__(self) -> None:
        self.anchor: tuple[int, Any, float] | None = None  # (device index, event, host seconds)
        self.until = 0.0  # host seconds: leads are read until then
        self.signatures: dict[int, SignatureReading] = {}
        self.closed: list[BatchReading] = []  # batches ended, kept once the GPU has passed their events
        # calls' and backwards' events not read yet: appended by calling threads and autograd's, read by the probe's
        self.pending: deque[tuple[Entry, BatchReading | None, str, int, Any, float]] = deque()
        self.collecting = threading.Lock()  # one reader at a time (the probe's thread, an anchor, the end)

    def anchor_now(self, entries: Iterable[Entry] = ()) -> None:
        """Right after a synchronize (a window's stop): the host's and the GPU's clocks meet (:func:`meet_clocks`);
        the CUDA signatures' next batches are read (their calls take the slow path until then)."""
        self.collect()  # the window's stop waited for the GPU: every event recorded before it has passed
        try:
            met = None if torch.cuda.is_current_stream_capturing() else meet_clocks()
        except Exception:  # noqa: BLE001 - no lead read: the advice falls back to its other rule
            met = None
        if met is None:
            self.anchor = None
            return
        self.anchor = (torch.cuda.current_device(), *met)
        self.until = met[1] + FRESH_S
        self.signatures = {}
        for entry in entries:
            entry.leads_due = entry.cuda

    def pause(self) -> None:
        """A window starts: no lead is read in it (the profiler slows the host); the batches being read are
        dropped (their calls' positions would skip the window's)."""
        self.until = 0.0
        self.signatures = {}

    def sample(self, entry: Entry, device: torch.device, mask: Any = None) -> Read | None:
        """At a CUDA call's start, before its kernels: an event, read later by :meth:`collect`; a :class:`Read` where
        the call is in a batch being read (its backward's event is then :meth:`follow_backward`'s)."""
        anchor = self.anchor
        if anchor is None or time.perf_counter() > self.until:
            entry.leads_due = False
            return None
        if device.index != anchor[0] or len(self.pending) >= PENDING or torch.cuda.is_current_stream_capturing():
            return None
        state = self.signatures.setdefault(entry.index, SignatureReading())
        if not isinstance(mask, torch.Tensor):
            if state.flat >= PER_SIGNATURE:
                entry.leads_due = False
                return None
            state.flat += 1
            self._record(entry, None, "forward", 0)
            return None
        base = mask if mask._base is None else mask._base  # transformers passes each layer a view of one mask
        if state.mask is None or state.mask() is not base:
            self._next_batch(entry, state, base)
        else:
            state.position += 1
        reading = state.reading
        if state.position >= MAX_POSITIONS:  # one mask for the whole run: no batch to read
            entry.leads_due = False
            return None
        if reading is None:
            return None
        if not self._record(entry, reading, "forward", state.position):
            return None
        return Read(reading, state.position)

    def _next_batch(self, entry: Entry, state: SignatureReading, base: torch.Tensor) -> None:
        if state.reading is not None:
            state.reading.closed = True
            self.closed.append(state.reading)
        try:
            state.mask = weakref.ref(base)
        except TypeError:
            state.mask = None
        state.position, state.started = 0, state.started + 1
        read = SKIP_BATCHES < state.started <= SKIP_BATCHES + BATCHES
        state.reading = BatchReading(entry) if read else None
        if state.started > SKIP_BATCHES + BATCHES:
            entry.leads_due = False

    def follow_backward(self, read: Read | None, out: Any) -> None:
        """After a read training call: its backward's start, read by a hook on its output's gradient."""
        if read is None or not isinstance(out, torch.Tensor) or not out.requires_grad:
            return

        def at_backward(grad: torch.Tensor) -> None:
            self._record(read.reading.entry, read.reading, "backward", read.position)

        try:
            out.register_hook(at_backward)
        except Exception:  # noqa: BLE001 - the program's call goes on; this backward is not read
            pass

    def _record(self, entry: Entry, reading: BatchReading | None, phase: str, position: int) -> bool:
        try:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
        except Exception:  # noqa: BLE001 - the program's call goes on; this lead is not read
            return False
        self.pending.append((entry, reading, phase, position, event, time.perf_counter()))
        return True

    def collect(self, wait: bool = False) -> None:
        """The leads of the calls whose events the GPU has passed (all of them, waiting for the GPU, with ``wait``):
        the forward's into their signatures' ``lead_us``, and each batch read whole, once closed, into
        ``lead_batches``. On the probe's thread (and at an anchor, at the end): calls and hooks append meanwhile."""
        with self.collecting:
            self._collect(wait)

    def _collect(self, wait: bool) -> None:
        anchor = self.anchor
        if anchor is None:
            return
        _, start, host_s = anchor
        pending = self.pending
        try:
            for _ in range(len(pending)):
                item = pending.popleft()
                entry, reading, phase, position, event, at_s = item
                if wait:
                    event.synchronize()
                elif not event.query():
                    pending.append(item)
                    continue
                lead = max(0.0, (host_s + start.elapsed_time(event) / 1e3 - at_s) * 1e6)
                if phase == "forward":
                    keep_sample(entry.stats.lead_us, lead)
                if reading is not None:
                    reading.put(phase, position, lead)
        except Exception:  # noqa: BLE001 - a CUDA error is the program's to see, at its own next call
            pending.clear()
        waiting = {id(item[1]) for item in list(pending)}
        for state in list(self.signatures.values()) + self.closed:
            reading = state.reading if isinstance(state, SignatureReading) else state
            if reading is not None and reading.closed and id(reading) not in waiting and reading.forward:
                batches = reading.entry.stats.lead_batches
                batches.append(BatchLeads(tuple(reading.forward), tuple(reading.backward)))
                del batches[: max(0, len(batches) - KEPT_BATCHES)]
                reading.forward = []  # kept once
        self.closed = [r for r in self.closed if r.forward]
