"""What ``sdpa-tui watch`` saw a program do: one row per distinct SDPA call signature.

Plain data only (no torch): the watched process sends :class:`ProcessState` records as JSON
lines, the parent merges them (one program may be several processes) into :class:`CallRow`
rows and a :class:`WatchReport`, which is what ``watch --report`` writes.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from .backends import ALL_BACKENDS, Backend
from .workload import DTYPES, Workload, WorkloadError

SCHEMA_VERSION = 1
WIRE_VERSION = 1

NOT_INTERCEPTED_NOTE = (
    "calls inside torch.compile'd regions run in the compiled graph, not through Python: they are "
    "not intercepted (no row, no count); the profiler bursts still list their attention kernels"
)
CPU_KERNELS_NOTE = "no GPU kernels on the CPU"

_DTYPE_NAMES = {"torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float32": "fp32", "torch.float64": "fp64"}


def dtype_name(dtype: str) -> str:
    """torch's spelling → the short one (``torch.float16`` → ``fp16``); others pass through."""
    return _DTYPE_NAMES.get(dtype, dtype)


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


@dataclass
class CallStats:
    """One signature in one process: what the probe knows about it."""

    signature: CallSignature
    count: int = 0
    site: str = "?"
    module: str | None = None
    backend: str | None = None  # the SDPBackend name SDPA chose, or None and ``choice_error``
    choice_error: str = ""
    why_not: dict[str, str] = field(default_factory=dict)
    gpu_us: list[float] = field(default_factory=list)  # sampled device time per call (CUDA events)
    host_us: list[float] = field(default_factory=list)  # sampled host time per call (the CPU's clock)
    kernels: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "signature": self.signature.to_dict(), "count": self.count, "site": self.site,
            "module": self.module, "backend": self.backend, "choice_error": self.choice_error,
            "why_not": dict(self.why_not), "gpu_us": list(self.gpu_us), "host_us": list(self.host_us),
            "kernels": list(self.kernels),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CallStats":
        return cls(
            signature=CallSignature.from_dict(d["signature"]), count=int(d.get("count", 0)),
            site=str(d.get("site", "?")), module=d.get("module"), backend=d.get("backend"),
            choice_error=str(d.get("choice_error", "")), why_not=dict(d.get("why_not", {})),
            gpu_us=[float(x) for x in d.get("gpu_us", ())], host_us=[float(x) for x in d.get("host_us", ())],
            kernels=list(d.get("kernels", ())),
        )


@dataclass
class ProcessState:
    """One watched process's state, as sent on the channel (each message replaces the last)."""

    pid: int
    calls: list[CallStats] = field(default_factory=list)
    compiled: list[str] = field(default_factory=list)  # what torch.compile was given
    compiled_kernels: list[str] = field(default_factory=list)  # attention kernels seen in compiled regions
    kernels_note: str = ""
    final: bool = False
    error: str = ""  # the traceback of an uncaught exception
    time_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "v": WIRE_VERSION, "pid": self.pid, "calls": [c.to_dict() for c in self.calls],
            "compiled": list(self.compiled), "compiled_kernels": list(self.compiled_kernels),
            "kernels_note": self.kernels_note, "final": self.final, "error": self.error, "time_s": self.time_s,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ProcessState":
        if d.get("v") != WIRE_VERSION:
            raise ValueError(f"watch channel version {d.get('v')!r}, expected {WIRE_VERSION}")
        return cls(
            pid=int(d["pid"]), calls=[CallStats.from_dict(c) for c in d.get("calls", ())],
            compiled=list(d.get("compiled", ())), compiled_kernels=list(d.get("compiled_kernels", ())),
            kernels_note=str(d.get("kernels_note", "")), final=bool(d.get("final", False)),
            error=str(d.get("error", "")), time_s=float(d.get("time_s", 0.0)),
        )


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass(frozen=True)
class CallRow:
    """One signature across every watched process: a row of the Calls view and of the report."""

    signature: CallSignature
    count: int
    site: str
    module: str | None
    backend: str | None
    choice_error: str
    why_not: dict[str, str]
    gpu_us: float | None  # median of the samples
    host_us: float | None
    samples: int
    kernels: tuple[str, ...]
    pids: tuple[int, ...]
    share: float | None = None  # of the program's measured attention time
    calls_per_s: float | None = None

    @property
    def time_us(self) -> float | None:
        """Per-call time used for the share: the GPU's where measured, else the host's (CPU runs)."""
        return self.gpu_us if self.gpu_us is not None else self.host_us

    def report_dict(self) -> dict[str, Any]:
        s = self.signature
        return {
            "site": self.site, "module": self.module, "q_shape": list(s.q_shape), "kv_shape": list(s.kv_shape),
            "dtype": s.dtype, "device": s.device,
            "mask": {"kind": s.mask, "shape": list(s.mask_shape) if s.mask_shape is not None else None},
            "causal": s.causal, "dropout_p": s.dropout_p, "scale": s.scale, "gqa": s.gqa, "grad": s.grad,
            "flags": list(s.flags), "priority": list(s.priority), "count": self.count,
            "calls_per_s": self.calls_per_s, "share": self.share, "backend": self.backend,
            "choice_error": self.choice_error or None, "why_not": dict(self.why_not),
            "gpu_us": self.gpu_us, "host_us": self.host_us, "timed_samples": self.samples,
            "kernels": list(self.kernels), "pids": list(self.pids),
        }


def merge(states: Iterable[ProcessState], elapsed_s: float | None = None) -> list[CallRow]:
    """Rows, one per signature, summed over processes, the busiest share first."""
    grouped: dict[CallSignature, list[tuple[int, CallStats]]] = {}
    for state in states:
        for stats in state.calls:
            grouped.setdefault(stats.signature, []).append((state.pid, stats))
    rows = []
    for signature, items in grouped.items():
        first = items[0][1]
        gpu = [x for _, st in items for x in st.gpu_us]
        host = [x for _, st in items for x in st.host_us]
        kernels = tuple(dict.fromkeys(k for _, st in items for k in st.kernels))
        count = sum(st.count for _, st in items)
        rows.append(CallRow(
            signature=signature, count=count, site=first.site, module=first.module,
            backend=first.backend, choice_error=first.choice_error, why_not=dict(first.why_not),
            gpu_us=_median(gpu), host_us=_median(host), samples=len(gpu) or len(host), kernels=kernels,
            pids=tuple(sorted({pid for pid, _ in items})),
            calls_per_s=count / elapsed_s if elapsed_s else None,
        ))
    total = sum(r.count * r.time_us for r in rows if r.time_us is not None)
    if total > 0:
        rows = [replace(r, share=r.count * r.time_us / total if r.time_us is not None else None) for r in rows]
    return sorted(rows, key=lambda r: (-(r.share or 0.0), -r.count))


@dataclass
class WatchReport:
    """``watch --report``'s JSON: ``{"schema_version", "program", "exit_code", "calls": [...]}``."""

    program: list[str]
    exit_code: int | None
    rows: list[CallRow]
    duration_s: float
    compiled: list[str] = field(default_factory=list)
    compiled_kernels: list[str] = field(default_factory=list)
    kernels_note: str = ""
    error: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION, "program": list(self.program), "exit_code": self.exit_code,
            "duration_s": round(self.duration_s, 3), "calls": [r.report_dict() for r in self.rows],
            "compiled": {
                "functions": list(self.compiled), "attention_kernels": list(self.compiled_kernels),
                "note": NOT_INTERCEPTED_NOTE if self.compiled else None,
            },
            "kernels_note": self.kernels_note or None, "error": self.error or None, "notes": list(self.notes),
        }


def build_report(program: list[str], exit_code: int | None, states: Iterable[ProcessState],
                 duration_s: float, notes: Iterable[str] = ()) -> WatchReport:
    states = list(states)
    return WatchReport(
        program=program, exit_code=exit_code, rows=merge(states, duration_s), duration_s=duration_s,
        compiled=list(dict.fromkeys(c for s in states for c in s.compiled)),
        compiled_kernels=list(dict.fromkeys(k for s in states for k in s.compiled_kernels)),
        kernels_note=next((s.kernels_note for s in states if s.kernels_note), ""),
        error=next((s.error for s in states if s.error), ""), notes=list(notes),
    )


def lab_workload(signature: CallSignature) -> tuple[Workload, list[str]]:
    """The lab's workload closest to a call, and what the lab does differently (said to the user).

    Raises :class:`WorkloadError` where the call has no lab counterpart.
    """
    q, kv = signature.q_shape, signature.kv_shape
    if len(q) < 3 or len(kv) < 3:
        raise WorkloadError(f"the lab measures [batch, heads, length, head dim] calls; this one is q{list(q)}")
    if q[-1] != kv[-1]:
        raise WorkloadError(f"the lab uses one head dim; q has {q[-1]}, k has {kv[-1]}")
    dtype = dtype_name(signature.dtype)
    if dtype not in DTYPES:
        raise WorkloadError(f"the lab measures fp16, bf16 and fp32; this call is {signature.dtype}")
    batch = 1
    for size in q[:-3]:
        batch *= size
    differences = []
    if signature.causal:
        mask = "causal"
    elif signature.mask != "none":
        mask = "padding"
        differences.append(f"the call's {signature.mask} mask {list(signature.mask_shape or ())} is measured "
                           "as the lab's boolean key-padding mask")
    else:
        mask = "none"
    if signature.causal and signature.mask != "none":
        differences.append("the call has both a mask and is_causal; the lab measures causal only")
    if signature.dropout_p:
        differences.append(f"the lab runs without dropout (the call has dropout_p={signature.dropout_p:g})")
    if signature.scale is not None:
        differences.append(f"the lab uses the default scale (the call has scale={signature.scale:g})")
    kv_heads = kv[-3]
    if kv_heads != q[-3] and not signature.gqa:
        raise WorkloadError(f"q has {q[-3]} heads and k {kv_heads} without enable_gqa: SDPA broadcasts them, the lab cannot")
    workload = Workload(
        batch=batch, heads=q[-3], kv_heads=kv_heads, seq=q[-2], kv_seq=kv[-2], head_dim=q[-1], dtype=dtype,
        mask=mask, direction="fwd+bwd" if signature.grad else "fwd",
    )
    return workload, differences


def backend_label(name: str | None) -> str:
    """``FLASH_ATTENTION`` → ``Flash``; unknown names pass through."""
    if name is None:
        return "none"
    for backend in ALL_BACKENDS:
        if backend.value == name:
            return backend.label
    return name


def lab_backends(signature: CallSignature) -> tuple[Backend, ...]:
    """The backend flags in force at the call, as the lab's flag set."""
    chosen = tuple(b for b in ALL_BACKENDS if b.value in signature.flags)
    return chosen or ALL_BACKENDS
