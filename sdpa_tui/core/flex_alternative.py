"""FlexAttention as an alternative that leaves SDPA: ``torch.compile(flex_attention)`` with the block mask equal to
the lab workload's mask, measured in its own child process (``engine/flex_cost.py``) on the lab's clocks, and the
code a user would write to get it.

Pure: the measurement comes as a :class:`FlexCost` (samples per clock, so the advice's noise rule applies to it as to
every backend); :func:`flex_alternative` makes it an :class:`~.advice.Alternative` marked ``leaves_sdpa``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .advice import Alternative, Measured
from .stats import Summary
from .workload import Workload

FLEX = "FLEX_ATTENTION"
"""The alternative's backend name (not one of SDPA's: ``backend_label`` passes it through)."""
FLEX_LABEL = "FlexAttention"
VARIANT = "flex_attention"


@dataclass(frozen=True)
class FlexSpec:
    """What to measure: the lab workload of a call signature, on its device."""

    workload: Workload
    device: str

    def to_dict(self) -> dict[str, Any]:
        return {"workload": asdict(self.workload), "device": self.device}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FlexSpec":
        return cls(Workload(**d["workload"]), d["device"])


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

    def to_dict(self) -> dict[str, Any]:
        return {"eager_us": list(self.eager_us), "gpu_us": list(self.gpu_us), "kernel_us": self.kernel_us,
                "error": self.error, "peak_mib": self.peak_mib, "compile_s": self.compile_s, "note": self.note}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FlexCost":
        return cls(tuple(d["eager_us"]), tuple(d["gpu_us"]), d.get("kernel_us"), d.get("error"), d.get("peak_mib"),
                   d["compile_s"], d.get("note") or "")


def refusal(workload: Workload, device: str) -> str | None:
    """Why FlexAttention cannot run this workload there, or None."""
    if workload.backward and not device.startswith("cuda"):
        return "FlexAttention has no backward on the CPU"
    return None


MASK_MODS = {
    "causal": "lambda b, h, q_idx, kv_idx: q_idx >= kv_idx",
    "padding": "lambda b, h, q_idx, kv_idx: key_keep[b, kv_idx]",
}
"""The ``mask_mod`` equal to each lab mask (``key_keep``: the call's [batch, kv_seq] boolean key-padding mask)."""


def flex_code(workload: Workload, compile_s: float | None = None) -> str:
    """The lines that replace the SDPA call: compiled once; the block mask built once per shape (causal) or for each
    new key-padding mask (its cost is not in the measured time: the code says so)."""
    w = workload
    took = f" (here {compile_s:.1f} s)" if compile_s is not None else ""
    names = "create_block_mask, flex_attention" if w.mask in MASK_MODS else "flex_attention"
    lines = [f"from torch.nn.attention.flex_attention import {names}",
             f"flex = torch.compile(flex_attention, dynamic=False)  # once; the first call of a shape compiles{took}"]
    mask = ""
    if w.mask in MASK_MODS:
        batch = "q.shape[0]" if w.mask == "padding" else "None"
        when = ("  # key_keep: the [batch, kv_len] mask; built again for every new mask, not in this time"
                if w.mask == "padding" else "  # once per shape")
        lines.append(f"block_mask = create_block_mask({MASK_MODS[w.mask]}, {batch}, None, q.shape[-2], k.shape[-2], "
                     f"device=q.device){when}")
        mask = ", block_mask=block_mask"
    gqa = ", enable_gqa=True" if w.gqa else ""
    lines.append(f"out = flex(q, k, v{mask}{gqa})  # in place of F.scaled_dot_product_attention(...)")
    return "\n".join(lines)


def flex_alternative(cost: FlexCost, workload: Workload) -> Measured:
    """The alternative as the advice lists it, with its eager and GPU/call summaries (for the noise rule)."""
    eager, gpu = Summary.of(cost.eager_us), Summary.of(cost.gpu_us)
    alternative = Alternative(VARIANT, FLEX, cost.kernel_us, gpu.median if gpu else None,
                              eager.median if eager else None, cost.error, cost.peak_mib,
                              flex_code(workload, cost.compile_s), leaves_sdpa=True)
    return Measured(alternative, eager, gpu)
