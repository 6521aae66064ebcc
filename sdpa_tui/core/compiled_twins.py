"""A compiled SDPA call beside the eager calls the same modules make: did the graph get what eager code passes?

pytorch#177712: under Dynamo, code that passes ``attn_mask=None`` in eager mode may build a mask
tensor instead (transformers does when it cannot skip the mask while tracing), and SDPA then picks
another backend for the graph. On the H100 (torch 2.11, transformers 5) a BERT's eager calls ran
cuDNN with no mask; its compiled graph got an all-keys bool mask [8, 1, 512, 512] whose last
dimension has stride 0, which no fused backend takes, so the graph ran MATH, decomposed by Inductor.

A twin is an eager row with the same q, k, v shapes, dtype, device, causal, dropout, scale, GQA and
grad, made by the same modules (the class prefix ``BertModel:`` set aside; eager rows carry it,
compiled rows do not), whose backend or mask differs from the compiled row's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .call_signature import CallSignature
from .stats import Summary


class _Row(Protocol):
    """What a twin is read from (a :class:`~.watch_report.CallRow`)."""

    signature: CallSignature
    compiled: bool
    backend: str | None
    eager_backend: str | None
    modules: tuple[str, ...]
    kernel_us: Summary | None
    site: str

    @property
    def backward_us(self) -> float | None: ...


@dataclass(frozen=True)
class EagerTwin:
    """The eager calls a compiled row is held against: their backend, mask and measured time per call."""

    backend: str | None
    mask: str  # "none", "bool [8, 1, 512, 512]"
    kernel_us: float | None  # forward, median per call (CUPTI)
    backward_us: float | None
    site: str

    def to_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "mask": self.mask, "kernel_us": self.kernel_us,
                "backward_us": self.backward_us, "site": self.site}


def mask_words(signature: CallSignature) -> str:
    if signature.mask == "none":
        return "none"
    return f"{signature.mask} {list(signature.mask_shape)}" if signature.mask_shape else signature.mask


def _same_call(a: CallSignature, b: CallSignature) -> bool:
    return (a.q_shape, a.kv_shape, a.dtype, a.device, a.causal, a.dropout_p, a.scale, a.gqa, a.grad) == \
        (b.q_shape, b.kv_shape, b.dtype, b.device, b.causal, b.dropout_p, b.scale, b.gqa, b.grad)


def _bare(module: str) -> str:
    return module.split(":", 1)[-1]


def graph_backend(row: _Row) -> str | None:
    """The backend the graph runs: profiled, else the one eager SDPA picks for the graph's own arguments."""
    return row.backend or row.eager_backend


def eager_twin(row: _Row, rows: list[_Row]) -> EagerTwin | None:
    """The eager row that makes the same call as compiled ``row`` with another backend or mask, if any."""
    if not row.compiled:
        return None
    mine = {_bare(m) for m in row.modules}
    for other in rows:
        if other.compiled or not _same_call(row.signature, other.signature):
            continue
        theirs = {_bare(m) for m in other.modules}
        if mine and theirs and not mine & theirs:
            continue
        differs = other.backend != graph_backend(row) or mask_words(other.signature) != mask_words(row.signature)
        if differs:
            return EagerTwin(other.backend, mask_words(other.signature),
                             other.kernel_us.median if other.kernel_us else None, other.backward_us, other.site)
    return None
