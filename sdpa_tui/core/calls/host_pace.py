"""What code that trades the GPU's time for the host's saves a program whose host and GPU overlap, from the host's
lead at each call of one batch.

Packed attention (``packed_alternative.py``) runs less GPU work than the padded call but costs the host more (torch's
``varlen_attn`` is a Python op). Where the host runs far ahead of the GPU, the GPU's saving is the program's; where
the host barely keeps ahead, every µs the code adds to it is a µs the GPU waits. Watch reads how far ahead the host
was at each call of a batch, in the order the program made them (``watch/probe/host_lead.py``: the forward's calls,
then their backwards, last layer first), and this module replays the batch with the code in place:

- the host reaches the j-th call later by what the code added to the host over the calls before it;
- the GPU reaches it sooner by what the code saved it over those calls;
- so the call's lead shrinks by both; where it would fall below zero the GPU waits that long, and every later call
  (and the batch's end, taken to be as far ahead as its last call) waits with it.

The batch's saving is then the GPU's saving less the longest such wait. A host-bound program (leads near zero) pays
the code's host time in full; a GPU-bound one with room to spare keeps the GPU's saving. No lead is measured with
the code in place: the model assumes the rest of the program's host and GPU work stays as it was.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BatchLeads:
    """How far ahead of the GPU the host was (µs) at each call on one batch's mask, by the call's position in the
    forward (0: the first layer's), and at each one's backward (the same positions; empty: an inference call or no
    backward read). None: that call was not read."""

    forward: tuple[float | None, ...]
    backward: tuple[float | None, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"forward": list(self.forward), "backward": list(self.backward)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BatchLeads:
        def floats(xs: Any) -> tuple[float | None, ...]:
            return tuple(None if x is None else float(x) for x in xs or ())
        return cls(floats(d.get("forward")), floats(d.get("backward")))


@dataclass(frozen=True)
class TypicalBatch:
    """The median lead at each position over the batches read whole (µs), and how many there were."""

    forward: tuple[float, ...]
    backward: tuple[float, ...]
    batches: int


def typical_batch(batches: Sequence[BatchLeads]) -> TypicalBatch | None:
    """The median batch of the most common length, over those with every forward call read (and every backward, where
    any batch of that length has one); None where no batch was read whole."""
    lengths = Counter(len(b.forward) for b in batches if b.forward)
    if not lengths:
        return None
    n = lengths.most_common(1)[0][0]
    same = [b for b in batches if len(b.forward) == n and all(x is not None for x in b.forward)]
    trained = [b for b in same if len(b.backward) == n and all(x is not None for x in b.backward)]
    if trained:
        same = trained
    if not same:
        return None

    def medians(rows: list[tuple[float | None, ...]]) -> tuple[float, ...]:
        return tuple(statistics.median(float(r[i]) for r in rows) for i in range(n))  # type: ignore[arg-type]
    return TypicalBatch(medians([b.forward for b in same]), medians([b.backward for b in trained]) if trained else (),
                        len(same))


@dataclass(frozen=True)
class PhaseChange:
    """What the code changes in one call's phase (forward or backward), µs a call: the host time it adds (negative:
    saves) and the GPU time it saves (negative: adds)."""

    host_added_us: float
    gpu_saved_us: float


def gpu_wait_us(batch: TypicalBatch, forward: PhaseChange, backward: PhaseChange | None = None) -> float:
    """How long the GPU would wait for the host over one batch with the code in place (µs; 0: never), from the
    leads the program's calls had without it (the module's doc)."""
    n = len(batch.forward)
    f_shift = forward.host_added_us + forward.gpu_saved_us
    points = [(lead, k * f_shift) for k, lead in enumerate(batch.forward)]
    shifted = n * f_shift
    if backward is not None and batch.backward:
        b_shift = backward.host_added_us + backward.gpu_saved_us
        order = list(reversed(batch.backward))  # the last layer's backward runs first
        points += [(lead, shifted + r * b_shift) for r, lead in enumerate(order)]
        shifted += n * b_shift
    if points:
        points.append((points[-1][0], shifted))  # the batch's end: as far ahead as its last call
    return max([0.0, *(moved - lead for lead, moved in points)])


def paced_saving_us(batch: TypicalBatch, forward: PhaseChange, backward: PhaseChange | None = None) -> float:
    """The program's time saved a batch with the code in place (µs; negative: lost): the GPU's saving over the
    batch's calls, less the time it would wait for the host (:func:`gpu_wait_us`)."""
    n = len(batch.forward)
    saved = n * (forward.gpu_saved_us + (backward.gpu_saved_us if backward is not None and batch.backward else 0.0))
    return saved - gpu_wait_us(batch, forward, backward)
