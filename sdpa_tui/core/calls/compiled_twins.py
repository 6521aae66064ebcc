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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..stats import Summary
from .call_signature import CallSignature


class _Row(Protocol):
    """What a twin is read from (a :class:`~.watch_report.CallRow`, frozen: read-only members)."""

    @property
    def signature(self) -> CallSignature: ...
    @property
    def compiled(self) -> bool: ...
    @property
    def backend(self) -> str | None: ...
    @property
    def eager_backend(self) -> str | None: ...
    @property
    def modules(self) -> tuple[str, ...]: ...
    @property
    def kernel_us(self) -> Summary | None: ...
    @property
    def site(self) -> str: ...
    @property
    def decomposed(self) -> bool: ...
    @property
    def mask_strides(self) -> tuple[int, ...] | None: ...
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
    mask_kind: str = "none"
    mask_shape: tuple[int, ...] | None = None

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


def eager_twin(row: _Row, rows: Sequence[_Row]) -> EagerTwin | None:
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
            o = other.signature
            return EagerTwin(other.backend, mask_words(o), other.kernel_us.median if other.kernel_us else None,
                             other.backward_us, other.site, o.mask, None if o.mask_shape is None else tuple(o.mask_shape))
    return None


@dataclass(frozen=True)
class CostSpec:
    """A compiled call to measure alone (``engine/costs/compiled_cost.py``): its signature, the mask's layout in the graph,
    and the mask of the eager call it is held against (its twin's; without a twin, its own)."""

    q_shape: tuple[int, ...]
    kv_shape: tuple[int, ...]
    dtype: str
    device: str
    mask: str
    mask_shape: tuple[int, ...] | None
    mask_strides: tuple[int, ...] | None
    causal: bool
    dropout_p: float
    scale: float | None
    gqa: bool
    grad: bool
    eager_mask: str
    eager_mask_shape: tuple[int, ...] | None
    against_twin: bool = False  # the eager mask is the twin's (else the call's own)

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CostSpec":
        def dims(value: Any) -> tuple[int, ...] | None:
            return None if value is None else tuple(int(x) for x in value)

        return cls(dims(d["q_shape"]) or (), dims(d["kv_shape"]) or (), str(d["dtype"]), str(d["device"]),
                   str(d["mask"]), dims(d.get("mask_shape")), dims(d.get("mask_strides")), bool(d["causal"]),
                   float(d["dropout_p"]), d.get("scale"), bool(d["gqa"]), bool(d["grad"]), str(d["eager_mask"]),
                   dims(d.get("eager_mask_shape")), bool(d.get("against_twin", False)))


@dataclass
class CompiledCost:
    """The compiled call alone against the eager call, µs per call on ``clock`` ("kernels" on a GPU, "host" on the
    CPU); forward+backward where autograd recorded the call."""

    clock: str
    compile_s: float
    compiled_us: float
    eager_us: float
    compiled_fwd_bwd_us: float | None = None
    eager_fwd_bwd_us: float | None = None
    against_twin: bool = False  # the eager side is the twin's call (its own mask), not the same arguments

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CompiledCost":
        return cls(**{k: d[k] for k in ("clock", "compile_s", "compiled_us", "eager_us", "compiled_fwd_bwd_us",
                                        "eager_fwd_bwd_us", "against_twin") if k in d})


def cost_spec(row: _Row, twin: EagerTwin | None) -> CostSpec | None:
    """What to measure for a compiled row: one that decomposed or runs another path than its eager ``twin``."""
    if not row.compiled or (twin is None and not row.decomposed):
        return None
    s = row.signature
    if twin is not None:
        eager_mask, eager_shape = twin.mask_kind, twin.mask_shape
    else:
        eager_mask, eager_shape = s.mask, s.mask_shape
    return CostSpec(tuple(s.q_shape), tuple(s.kv_shape), s.dtype, s.device, s.mask,
                    None if s.mask_shape is None else tuple(s.mask_shape), row.mask_strides, s.causal, s.dropout_p,
                    s.scale, s.gqa, s.grad, eager_mask, None if eager_shape is None else tuple(eager_shape),
                    against_twin=twin is not None)


def cost_lines(cost: CompiledCost) -> list[str]:
    """The measurement, in words (µs per call on its clock)."""
    against = "the eager calls' own arguments" if cost.against_twin else "eager SDPA with the same arguments"
    clock = "GPU kernels" if cost.clock == "kernels" else "host time"
    lines = [f"measured alone after the run ({clock}, µs a call): this call compiled as the graph has it "
             f"{cost.compiled_us:,.1f} forward against {cost.eager_us:,.1f} with {against} "
             f"({cost.compiled_us - cost.eager_us:+,.1f})"]
    if cost.compiled_fwd_bwd_us is not None and cost.eager_fwd_bwd_us is not None:
        lines.append(f"  forward+backward {cost.compiled_fwd_bwd_us:,.1f} against {cost.eager_fwd_bwd_us:,.1f} "
                     f"({cost.compiled_fwd_bwd_us - cost.eager_fwd_bwd_us:+,.1f}); compiled alone, the graph may "
                     f"fuse its neighbours into it")
    return lines
