"""The code the advice offers for a watched call, written as the call's replacement in the names a user has where it
calls SDPA (``q, k, v``, ``attn_mask`` for its mask) and assigning ``out``, its result. Each text keeps the call's own
arguments, read from its signature: its mask or ``is_causal``, ``dropout_p``, ``scale`` where it set one,
``enable_gqa`` where still needed. Before a text is offered, the measuring runs it as it is on inputs of the call's
shapes, dtype, device and mask form and compares its ``out`` with the call's own (``engine/costs/code_check.py``); a text
that differs, or raises, is not offered.

Pure: texts and the plain records that carry them to the checking process and back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..backends import ALL_BACKENDS, Backend
from ..workload import Workload
from .call_signature import CallSignature

SDPA = "F.scaled_dot_product_attention"

HEAD_DIM_ALIGN = 8
"""cuDNN takes a head dim that is a multiple of this, and Mem-efficient too for 16-bit inputs (4 for fp32; torch's
``check_head_dim_size_mem_efficient``); Flash pads any head dim up to 256 itself but takes no fp32. Padded, a call
may reach a backend that refused it (an fp32 call with head dim 102: MATH → Mem-efficient)."""


def padded_head_dim(head_dim: int) -> int:
    return -(-head_dim // HEAD_DIM_ALIGN) * HEAD_DIM_ALIGN


def arguments(signature: CallSignature, *, mask: bool = True, causal: bool | None = None, gqa: bool | None = None,
              scale: str | None = None) -> str:
    """The call's keyword arguments after ``q, k, v``, as it passed them (each keyword overrides one)."""
    words = []
    if mask and signature.mask != "none":
        words.append("attn_mask=attn_mask")
    if signature.dropout_p:
        words.append(f"dropout_p={signature.dropout_p!r}")
    if signature.causal if causal is None else causal:
        words.append("is_causal=True")
    if scale is not None:
        words.append(f"scale={scale}")
    elif signature.scale is not None:
        words.append(f"scale={signature.scale!r}")
    if signature.gqa if gqa is None else gqa:
        words.append("enable_gqa=True")
    return "".join(f", {word}" for word in words)


def call_code(signature: CallSignature) -> str:
    """The call itself, as it was made."""
    return f"out = {SDPA}(q, k, v{arguments(signature)})"


def priority_code(best: Backend, order: Sequence[str]) -> str:
    """The line that makes SDPA try ``best`` first and keeps the others as fallbacks, in ``order``."""
    rest = [b for b in (order or [b.value for b in ALL_BACKENDS]) if b != best.value]
    names = ", ".join(f"SDPBackend.{name}" for name in [best.value, *rest])
    return f"with sdpa_kernel([{names}], set_priority=True):"


def backend_code(best: Backend, signature: CallSignature) -> str:
    """The backend switch around the call (or around the code that makes it: a model's forward)."""
    return f"{priority_code(best, signature.priority)}\n    {call_code(signature)}"


def causal_code(signature: CallSignature) -> str:
    """``is_causal=True`` in place of a mask that is exactly causal: the fused kernels skip the masked half."""
    return f"out = {SDPA}(q, k, v{arguments(signature, mask=False, causal=True)})  # in place of its causal attn_mask"


def expand_kv_code(signature: CallSignature, group: int) -> str:
    """K/V repeated to the query heads, so SDPA needs no ``enable_gqa`` (fused kernels that reject GQA take it)."""
    return (f"out = {SDPA}(q, k.repeat_interleave({group}, dim=-3), v.repeat_interleave({group}, dim=-3)"
            f"{arguments(signature, gqa=False)})")


def pad_head_dim_code(signature: CallSignature, head_dim: int) -> str:
    """Q, K and V padded with zeros to the next multiple of 8 and the output cut back: zeros add nothing to Q·K, the
    extra output columns are dropped, and the scale stays the call's (that of the true head dim where it set none),
    so the result is the same."""
    pad = padded_head_dim(head_dim) - head_dim
    scale = None if signature.scale is not None else f"{head_dim} ** -0.5"
    return (f"out = {SDPA}(*(F.pad(t, (0, {pad})) for t in (q, k, v)){arguments(signature, scale=scale)})"
            f"[..., :{head_dim}]  # the pads copy Q, K, V: not in this time")


def bf16_code(signature: CallSignature) -> str:
    """The call in bf16, its output back in fp32: it changes the numerics (listed with its error, never advised)."""
    return (f"out = {SDPA}(q.bfloat16(), k.bfloat16(), v.bfloat16(){arguments(signature)}).float()  # changes the "
            "numerics: see its error against float64")


REWRITE_NUMERICS = {"bf16": "bf16"}
"""A rewrite that changes the numerics is compared with the call at the tolerance of the dtype it computes in."""


def rewrite_codes(signature: CallSignature, workload: Workload) -> dict[str, str]:
    """Each rewrite's code (``watch/advice/advise.rewritten`` says which apply to a call)."""
    return {"is_causal": causal_code(signature),
            "expand_kv": expand_kv_code(signature, workload.heads // max(workload.kv_heads, 1)),
            "pad_head_dim": pad_head_dim_code(signature, workload.head_dim), "bf16": bf16_code(signature)}


@dataclass(frozen=True)
class OfferedCode:
    """One code to run against a call: ``name`` (a backend, or a rewrite's variant) and its text; ``numerics``: the
    short dtype whose tolerance the comparison uses where the code computes in another ("": the call's)."""

    name: str
    code: str
    numerics: str = ""


@dataclass(frozen=True)
class CodesToCheck:
    """The codes offered for one call and what they run on: inputs of the lab ``workload`` (the call's shapes and
    dtype) on ``device``, the call's arguments (``signature``) and its mask's form (``core/calls/mask_forms``; "": not
    read, any mask of the call's kind)."""

    workload: Workload
    device: str
    signature: CallSignature
    mask_form: str
    codes: tuple[OfferedCode, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"workload": asdict(self.workload), "device": self.device, "signature": self.signature.to_dict(),
                "mask_form": self.mask_form, "codes": [asdict(c) for c in self.codes]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CodesToCheck":
        return cls(Workload(**d["workload"]), d["device"], CallSignature.from_dict(d["signature"]), d["mask_form"],
                   tuple(OfferedCode(**c) for c in d["codes"]))


@dataclass(frozen=True)
class CodeCheck:
    """What running one code against the call gave: ``matched`` (max |out - the call's| / max |the call's|, within
    the tolerance), or ``why`` it is not offered."""

    matched: float | None
    why: str = ""

    @property
    def offered(self) -> bool:
        return self.matched is not None and not self.why
