"""FlexAttention as an alternative that leaves SDPA: ``torch.compile(flex_attention)`` with a block mask equal to the
call's own mask, and the code a user would write to get it. That code is the one source: :func:`flex_spec` writes it,
the measuring child process (``engine/costs/flex_cost.py``) runs exactly that text on inputs of the call's shapes and mask
form, compares its output with SDPA's call there within the dtype's tolerance (no answer where it differs), and times
it; the advice shows the same text. A mask that no ``mask_mod`` here expresses (``core/calls/mask_forms.OTHER``) gets no
FlexAttention code at all.

Pure: the measurement comes as a :class:`FlexCost` (samples per clock, so the advice's noise rule applies to it as to
every backend); :func:`flex_alternative` makes it an :class:`~.advice.Alternative` marked ``leaves_sdpa``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..stats import Summary
from ..workload import Workload
from .advice import Alternative, Measured
from .mask_forms import CAUSAL, CAUSAL_KEY_PADDING, FORMS, KEY_PADDING, NONE

FLEX = "FLEX_ATTENTION"
"""The alternative's backend name (not one of SDPA's: ``backend_label`` passes it through)."""
FLEX_LABEL = "FlexAttention"
VARIANT = "flex_attention"


@dataclass(frozen=True)
class FlexSpec:
    """What to run and measure: ``code`` (:func:`flex_code`) at the lab workload of a call signature (its shapes), on
    its device, with a mask of the call's form (``core/calls/mask_forms``)."""

    workload: Workload
    device: str
    mask_form: str
    code: str

    def to_dict(self) -> dict[str, Any]:
        return {"workload": asdict(self.workload), "device": self.device, "mask_form": self.mask_form,
                "code": self.code}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FlexSpec":
        return cls(Workload(**d["workload"]), d["device"], d["mask_form"], d["code"])


def flex_spec(workload: Workload, device: str, mask_form: str) -> FlexSpec | str:
    """The spec of a call whose mask has ``mask_form``, or why FlexAttention is not offered for it."""
    if mask_form not in FORMS or not mask_form:
        return "the call's mask was not read at its first call"
    if mask_form not in (NONE, *MASK_MODS):
        return ("the call's mask is neither causal nor key padding (per head, a window or a bias): no mask_mod here "
                "expresses it")
    return FlexSpec(workload, device, mask_form, flex_code(workload, mask_form))


@dataclass(frozen=True)
class FlexCost:
    """FlexAttention at the workload, µs per call: ``eager_us`` (host loop) and ``gpu_us`` (CUDA graph replays, empty
    on the CPU or where the graph could not be captured) as sample lists, ``kernel_us`` (the GPU's own work per call,
    from torch.profiler) on a GPU; the error against float64 MATH; the first call's compile time."""

    eager_us: tuple[float, ...]
    gpu_us: tuple[float, ...]
    kernel_us: float | None
    error: float | None
    peak_mib: float | None
    compile_s: float
    note: str = ""  # what was not measured, and why (a CUDA graph that could not be captured)
    matched: float | None = None  # max |out - SDPA's| / max |SDPA's| on the same inputs (within the dtype's tolerance)

    def to_dict(self) -> dict[str, Any]:
        return {"eager_us": list(self.eager_us), "gpu_us": list(self.gpu_us), "kernel_us": self.kernel_us,
                "error": self.error, "peak_mib": self.peak_mib, "compile_s": self.compile_s, "note": self.note,
                "matched": self.matched}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FlexCost":
        return cls(tuple(d["eager_us"]), tuple(d["gpu_us"]), d.get("kernel_us"), d.get("error"), d.get("peak_mib"),
                   d["compile_s"], d.get("note") or "", d.get("matched"))


def refusal(workload: Workload, device: str) -> str | None:
    """Why FlexAttention cannot run this workload there, or None."""
    if workload.backward and not device.startswith("cuda"):
        return "FlexAttention has no backward on the CPU"
    return None


MASK_MODS = {
    CAUSAL: "lambda b, h, q_idx, kv_idx: q_idx >= kv_idx",
    KEY_PADDING: "lambda b, h, q_idx, kv_idx: key_keep[b, kv_idx]",
    CAUSAL_KEY_PADDING: "lambda b, h, q_idx, kv_idx: (q_idx >= kv_idx) & key_keep[b, kv_idx]",
}
"""The ``mask_mod`` of each mask form (``key_keep``: the call's [batch, kv_len] boolean key-padding mask, True where a
key is kept: transformers' ``attention_mask`` as a bool). Read from a tensor, as a program's own mask is: a mask_mod
that compared ``kv_idx`` with a constant ran 124 µs a call where the tensor read ran 154-167 (scripts/diagnostics/diag_flex.py, an
H100, [8, 16, 1024, 64] bf16), so the measuring runs this text, not one of its own."""


def flex_code(workload: Workload, mask_form: str) -> str:
    """The lines that replace the SDPA call: compiled once; the block mask built once per shape (causal) or for each
    new key-padding mask (its cost is not in the measured time: the code says so). Its last line is the call (what
    the measuring times). ``dynamic=False``: each shape compiled for its own sizes (after a second shape Dynamo's
    automatic dynamic shapes made kernels for any size, slower: 372 µs a call against 306 at [4, 16, 2048, 128] bf16
    on an H100, scripts/diagnostics/diag_flex.py)."""
    w = workload
    names = "create_block_mask, flex_attention" if mask_form in MASK_MODS else "flex_attention"
    lines = [f"from torch.nn.attention.flex_attention import {names}",
             "flex = torch.compile(flex_attention, dynamic=False)  # once; the first call of a shape compiles"]
    mask = ""
    if mask_form in MASK_MODS:
        padded = mask_form != CAUSAL
        batch = "q.shape[0]" if padded else "None"
        when = ("  # key_keep: the [batch, kv_len] mask; built again for every new mask, not in this time"
                if padded else "  # once per shape")
        lines.append(f"block_mask = create_block_mask({MASK_MODS[mask_form]}, {batch}, None, q.shape[-2], "
                     f"k.shape[-2], device=q.device){when}")
        mask = ", block_mask=block_mask"
    gqa = ", enable_gqa=True" if w.gqa else ""
    lines.append(f"out = flex(q, k, v{mask}{gqa})  # in place of F.scaled_dot_product_attention(...)")
    return "\n".join(lines)


def flex_alternative(cost: FlexCost, spec: FlexSpec) -> Measured:
    """The alternative as the advice lists it, with its eager and GPU/call summaries (for the noise rule): the code
    is the spec's, the text the measuring ran."""
    eager, gpu = Summary.of(cost.eager_us), Summary.of(cost.gpu_us)
    alternative = Alternative(VARIANT, FLEX, cost.kernel_us, gpu.median if gpu else None,
                              eager.median if eager else None, cost.error, cost.peak_mib, spec.code,
                              leaves_sdpa=True, first_call_s=cost.compile_s)
    return Measured(alternative, eager, gpu)
