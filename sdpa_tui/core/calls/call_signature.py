"""The signature of an SDPA call: everything that decides which backend SDPA picks for it.

Plain data (no torch): torch's spellings of dtypes and devices are kept as strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DTYPE_NAMES = {"torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float32": "fp32", "torch.float64": "fp64"}


def dtype_name(dtype: str) -> str:
    """torch's spelling → the short one (``torch.float16`` → ``fp16``); others pass through."""
    return DTYPE_NAMES.get(dtype, dtype)


@dataclass(frozen=True)
class CallSignature:
    """Everything that decides which backend SDPA picks for a call."""

    q_shape: tuple[int, ...]
    kv_shape: tuple[int, ...]
    dtype: str  # torch's spelling, e.g. "torch.float16"
    device: str
    mask: str = "none"  # none | bool | float
    mask_shape: tuple[int, ...] | None = None
    causal: bool = False
    dropout_p: float = 0.0
    scale: float | None = None
    gqa: bool = False
    grad: bool = False  # autograd records the call (training)
    flags: tuple[str, ...] = ()  # enabled SDPBackend names at the call
    priority: tuple[str, ...] = ()  # torch's priority order at the call

    def describe(self) -> str:
        text = f"q{list(self.q_shape)} kv{list(self.kv_shape)} {dtype_name(self.dtype)}"
        extras = []
        if self.mask != "none":
            extras.append(f"{self.mask} mask{list(self.mask_shape or ())}")
        if self.causal:
            extras.append("causal")
        if self.gqa:
            extras.append("gqa")
        if self.dropout_p:
            extras.append(f"dropout {self.dropout_p:g}")
        if self.scale is not None:
            extras.append(f"scale {self.scale:g}")
        if self.grad:
            extras.append("grad")
        return text + (" " + ", ".join(extras) if extras else "")

    def brief(self) -> str:
        """The signature in a table's cell: shapes without spaces (``qkv[...]`` where q and k share one), the dtype
        and what the call passed; the mask's shape and the scale are left to :meth:`describe`."""
        def dims(shape: tuple[int, ...]) -> str:
            return "[" + ",".join(str(d) for d in shape) + "]"

        shapes = f"qkv{dims(self.q_shape)}" if self.q_shape == self.kv_shape else \
            f"q{dims(self.q_shape)} kv{dims(self.kv_shape)}"
        words = [shapes, dtype_name(self.dtype)]
        if self.mask != "none":
            words.append(f"{self.mask} mask")
        words += [word for word, on in (("causal", self.causal), ("gqa", self.gqa),
                                        (f"dropout {self.dropout_p:g}", self.dropout_p), ("grad", self.grad)) if on]
        return " ".join(words)

    def to_dict(self) -> dict[str, Any]:
        return {
            "q_shape": list(self.q_shape), "kv_shape": list(self.kv_shape), "dtype": self.dtype,
            "device": self.device, "mask": self.mask,
            "mask_shape": list(self.mask_shape) if self.mask_shape is not None else None,
            "causal": self.causal, "dropout_p": self.dropout_p, "scale": self.scale, "gqa": self.gqa,
            "grad": self.grad, "flags": list(self.flags), "priority": list(self.priority),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CallSignature":
        mask_shape = d.get("mask_shape")
        return cls(
            q_shape=tuple(d["q_shape"]), kv_shape=tuple(d["kv_shape"]), dtype=str(d["dtype"]),
            device=str(d["device"]), mask=str(d.get("mask", "none")),
            mask_shape=tuple(mask_shape) if mask_shape is not None else None,
            causal=bool(d.get("causal", False)), dropout_p=float(d.get("dropout_p", 0.0)),
            scale=d.get("scale"), gqa=bool(d.get("gqa", False)), grad=bool(d.get("grad", False)),
            flags=tuple(d.get("flags", ())), priority=tuple(d.get("priority", ())),
        )
