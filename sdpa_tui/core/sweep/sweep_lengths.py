"""The lengths a sweep measures: ``--seq`` parsed into sequence lengths, and the workload at each.

Pure analysis: no torch, no Textual, no Rich. ``sdpa-tui sweep`` and the UI's sweep view plan
their lengths here before measuring them with the engine.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..workload import LIMITS, Workload

MAX_POINTS = 64
TIMEOUT_PER_LENGTH_S = 120.0
"""When this is up for one length, a sweep (``sdpa-tui sweep`` and the monitor's ``v``) keeps what that length has
(said as few samples) and goes on."""
"""More lengths than this in one sweep is a typo (a range of powers of two has at most 21)."""


def parse_seqs(text: str) -> tuple[int, ...]:
    """``"128,256,512"`` or ``"256:32768"`` (powers of two from A to B inclusive), or both mixed.

    Returns the lengths in increasing order without repeats. Raises ``ValueError`` with a
    message that names what is wrong and what is allowed.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError("--seq is empty: give lengths (--seq 128,256,512) or a range (--seq 256:32768)")
    seqs: set[int] = set()
    for item in (part.strip() for part in text.split(",")):
        if not item:
            raise ValueError(f"--seq {text!r} has an empty item: separate lengths with single commas")
        if ":" in item:
            seqs.update(_power_range(item))
        else:
            seqs.add(_length(item, item))
    if len(seqs) > MAX_POINTS:
        raise ValueError(f"--seq {text!r} gives {len(seqs)} lengths; at most {MAX_POINTS} in one sweep")
    return tuple(sorted(seqs))


def _length(word: str, item: str) -> int:
    limit = LIMITS["seq"]
    try:
        value = int(word.strip().replace("_", ""))
    except ValueError:
        raise ValueError(f"--seq {item!r}: {word.strip()!r} is not a whole number") from None
    if not 1 <= value <= limit:
        raise ValueError(f"--seq {item!r}: lengths must be from 1 to {limit:,}, got {value:,}")
    return value


def _power_range(item: str) -> list[int]:
    parts = item.split(":")
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        raise ValueError(f"--seq {item!r}: a range is A:B, both ends given, e.g. 256:32768")
    low, high = (_length(p, item) for p in parts)
    for end in (low, high):
        if end & (end - 1):
            raise ValueError(
                f"--seq {item!r}: a range steps over powers of two, so both ends must be powers of two "
                f"({end:,} is not); list other lengths with commas, e.g. --seq 384,768,1536"
            )
    if low > high:
        raise ValueError(f"--seq {item!r}: the range goes down; write the shorter length first ({high}:{low})")
    return [1 << k for k in range(low.bit_length() - 1, high.bit_length())]


def sweep_workloads(base: Workload, seqs: Sequence[int], kv_seq: int | None = None) -> list[Workload]:
    """The workload at each length: ``base`` with ``seq`` set, and ``kv_seq`` following it unless fixed.

    Raises :class:`~.workload.WorkloadError` naming the length whose workload is invalid.
    """
    out = []
    for seq in seqs:
        try:
            out.append(base.with_changes(seq=seq, kv_seq=kv_seq if kv_seq is not None else seq))
        except ValueError as exc:
            raise type(exc)(f"at seq {seq:,}: {exc}") from None
    return out
