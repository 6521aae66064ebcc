"""The workload: the shapes and options SDPA is measured on, validated before anything runs."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from .padded_lengths import describe as describe_lengths

DTYPES: dict[str, int] = {"fp16": 2, "bf16": 2, "fp32": 4}
"""Allowed dtypes and their size in bytes."""

MASKS = ("none", "causal", "padding")
"""``none``: no mask; ``causal``: ``is_causal=True``; ``padding``: a boolean key-padding mask."""

DIRECTIONS = ("fwd", "fwd+bwd")

# Upper bounds that no real attention layer reaches; past them the input is a typo.
LIMITS: dict[str, int] = {
    "batch": 65_536,
    "heads": 1_024,
    "kv_heads": 1_024,
    "seq": 1 << 20,
    "kv_seq": 1 << 20,
    "head_dim": 1_024,
}
MAX_INPUT_BYTES = 64 << 30
"""Q, K, V and the output together may not exceed this: no GPU holds more."""


class WorkloadError(ValueError):
    """A workload that cannot be measured; the message says what is wrong and what is allowed."""


@dataclass(frozen=True)
class Workload:
    batch: int = 2
    heads: int = 8
    kv_heads: int = 8
    seq: int = 512
    kv_seq: int = 512
    head_dim: int = 64
    dtype: str = "fp16"
    mask: str = "none"
    direction: str = "fwd"
    lengths: tuple[int, ...] = ()
    """A padded batch's real lengths, one per sequence (``mask="padding"``, queries and keys alike): the key-padding
    mask keeps each sequence's first ``lengths[b]`` keys; empty: the last eighth of every sequence is padding."""

    def __post_init__(self) -> None:
        if not isinstance(self.lengths, tuple):  # a JSON list, or null: none
            lengths = self.lengths
            object.__setattr__(self, "lengths", () if lengths is None else tuple(lengths) if isinstance(lengths, list)
                               else lengths)
        validate(self)

    # -- derived -------------------------------------------------------------------------
    @property
    def causal(self) -> bool:
        return self.mask == "causal"

    @property
    def gqa(self) -> bool:
        return self.kv_heads != self.heads

    @property
    def backward(self) -> bool:
        return self.direction == "fwd+bwd"

    @property
    def forward_flops(self) -> float:
        """4·B·H·Nq·Nkv·D, halved when causal (the usual count of attention FLOPs)."""
        flops = 4.0 * self.batch * self.heads * self.seq * self.kv_seq * self.head_dim
        return flops / 2 if self.causal else flops

    @property
    def flops(self) -> float:
        """FLOPs of one call in this direction: the backward counts 2.5x the forward."""
        return self.forward_flops * (3.5 if self.backward else 1.0)

    @property
    def input_bytes(self) -> int:
        """Bytes of Q, K, V and the output."""
        size = DTYPES[self.dtype]
        q_and_out = 2 * self.batch * self.heads * self.seq * self.head_dim
        kv = 2 * self.batch * self.kv_heads * self.kv_seq * self.head_dim
        return (q_and_out + kv) * size

    @property
    def math_bytes_lower_bound(self) -> int:
        """MATH materialises the attention matrix: scores and probabilities, in fp32 at least.

        A lower bound (on an H100, [1, 16, 8192, 128] bf16 causal used 9,728 MiB where this
        says 8,192 MiB): past the free memory, launching MATH cannot succeed.
        """
        return 2 * self.batch * self.heads * self.seq * self.kv_seq * 4

    def describe(self, swept: bool = False, kv_fixed: bool = False) -> str:
        """``[2, 8, 512, 64] fp16`` plus whatever differs from the plain case.

        ``swept``: the sequence length shows as N (a sweep); ``kv_fixed``: the kv length stays
        put while N varies, so it is named.
        """
        seq = "N" if swept else str(self.seq)
        text = f"[{self.batch}, {self.heads}, {seq}, {self.head_dim}] {self.dtype}"
        extras = []
        if self.gqa:
            extras.append(f"kv heads {self.kv_heads}")
        if (kv_fixed if swept else self.kv_seq != self.seq):
            extras.append(f"kv len {self.kv_seq}")
        if self.lengths:
            extras.append(describe_lengths(self.lengths, self.kv_seq))
        elif self.mask != "none":
            extras.append(self.mask)
        if self.backward:
            extras.append("fwd+bwd")
        return text + (" " + ", ".join(extras) if extras else "")

    # -- edits (each returns a new, validated workload) -----------------------------------
    def with_changes(self, **changes: Any) -> "Workload":
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: ``lengths`` a list, and left out where there are none (every workload before it existed)."""
        body = asdict(self)
        if self.lengths:
            body["lengths"] = list(self.lengths)
        else:
            del body["lengths"]
        return body

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Workload":
        if not isinstance(data, dict):
            raise WorkloadError("a workload must be a JSON object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise WorkloadError(f"unknown workload field(s): {', '.join(unknown)}")
        return cls(**data)


def validate(w: Workload) -> None:
    """Raise :class:`WorkloadError` naming the first problem found."""
    for name, limit in LIMITS.items():
        value = getattr(w, name)
        allowed = f"a whole number from 1 to {limit:,}"
        if isinstance(value, bool) or not isinstance(value, int):
            raise WorkloadError(f"{name} must be {allowed}, got {value!r}")
        if not 1 <= value <= limit:
            raise WorkloadError(f"{name} must be {allowed}, got {value:,}")
    for name, choices in (("dtype", tuple(DTYPES)), ("mask", MASKS), ("direction", DIRECTIONS)):
        value = getattr(w, name)
        if not isinstance(value, str) or value not in choices:  # a JSON list is no dtype
            raise WorkloadError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    _validate_lengths(w)
    if w.heads % w.kv_heads:
        divisors = ", ".join(str(d) for d in range(1, w.heads + 1) if w.heads % d == 0)
        raise WorkloadError(
            f"kv_heads ({w.kv_heads}) must divide heads ({w.heads}) evenly: one of {divisors}"
        )
    if w.input_bytes > MAX_INPUT_BYTES:
        raise WorkloadError(
            f"Q, K, V and the output would need {w.input_bytes / 2**30:,.1f} GiB; "
            f"the limit is {MAX_INPUT_BYTES >> 30} GiB"
        )


def _validate_lengths(w: Workload) -> None:
    if isinstance(w.lengths, tuple) and not w.lengths:
        return
    if not isinstance(w.lengths, tuple) or not all(isinstance(n, int) and not isinstance(n, bool) for n in w.lengths):
        raise WorkloadError(f"lengths must be whole numbers, got {w.lengths!r}")
    if w.mask != "padding":
        raise WorkloadError(f"lengths are a padded batch's: they need the padding mask, not {w.mask}")
    if len(w.lengths) != w.batch:
        raise WorkloadError(f"lengths give {len(w.lengths)} sequences; the batch has {w.batch}")
    if w.seq != w.kv_seq:
        raise WorkloadError(f"lengths are the queries' and the keys' alike: seq ({w.seq}) must equal kv_seq ({w.kv_seq})")
    if not all(1 <= n <= w.kv_seq for n in w.lengths):
        raise WorkloadError(f"each length must be from 1 to the padded length {w.kv_seq:,}, got "
                            f"{', '.join(f'{n:,}' for n in w.lengths if not 1 <= n <= w.kv_seq)}")
