"""What watch knows about the gradients SDPA's backward produced for a signature (plain data, no torch).

The probe (``watch/probe/checks/gradient_sentinel.py``) looks at sampled backwards: it counts the non-finite elements of
``dq``, ``dk`` and ``dv`` as they leave SDPA's backward, of the gradient arriving from upstream (``grad_out``)
and of the inputs, so a NaN is blamed where it began; at a sparser cadence it compares the three gradients with
float64 math on the same tensors. A flagged call's tensors are saved as a repro folder (``watch/probe/checks/repro.py``);
after the program exits the parent replays them through every backend (``watch/probe/checks/replay.py``): each
:class:`BackendReplay` says what that backend made of the same inputs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

GRADIENTS = ("dq", "dk", "dv")

BLAME_BACKEND = "the backend's backward"
BLAME_UPSTREAM = "the gradient arriving from upstream already held NaN or Inf"
BLAME_INPUTS = "the inputs already held NaN or Inf"

TOLERANCE = {"torch.float16": 1e-2, "torch.bfloat16": 5e-2, "torch.float32": 5e-3, "torch.float64": 1e-9}
"""Largest error per gradient that passes: max |grad - ref| over the largest magnitude of the terms summed into the
gradient (``watch/probe/checks/gradient_reference.py``), so a sum that cancels does not cry wolf; a backend that computes the
wrong thing is off by the order of that magnitude. Above a half-precision result's own rounding (2^-8 for bf16,
2^-11 for fp16) with room for accumulation; fp32 leaves room for TF32 matmuls in MATH on a GPU."""


def _counts(d: Any) -> dict[str, int]:
    return {g: int(v) for g, v in dict(d or {}).items() if g in GRADIENTS}


@dataclass
class BackendReplay:
    """One backend run forward and backward on a flagged call's saved tensors."""

    backend: str
    result: str  # "clean" | "non-finite" | "out of tolerance" | "error" | "not eligible"
    detail: str = ""  # which gradient held what, or torch's words
    us: float | None = None  # forward + backward per call, CUDA events (GPU) or the host clock (CPU)
    nonfinite: dict[str, int] = field(default_factory=dict)
    max_rel_error: dict[str, float] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        return self.result == "clean"

    def to_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "result": self.result, "detail": self.detail or None, "us": self.us,
                "nonfinite": dict(self.nonfinite), "max_rel_error": dict(self.max_rel_error)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "BackendReplay":
        return cls(str(d["backend"]), str(d["result"]), str(d.get("detail") or ""),
                   None if d.get("us") is None else float(d["us"]), _counts(d.get("nonfinite")),
                   {g: float(v) for g, v in dict(d.get("max_rel_error") or {}).items() if g in GRADIENTS})


@dataclass
class GradientCheck:
    """A signature's sampled backwards: what was non-finite and where it began, and the error against float64."""

    samples: int = 0  # sampled backwards whose flags were read
    nonfinite: dict[str, int] = field(default_factory=dict)  # samples where SDPA's backward made this one non-finite
    first_bad: dict[str, int] = field(default_factory=dict)  # the first such sample: its non-finite elements
    elements: dict[str, int] = field(default_factory=dict)  # each gradient's size
    upstream_nonfinite: int = 0  # samples whose grad_out held NaN or Inf (the backward then cannot be blamed)
    inputs_nonfinite: int = 0  # samples whose q, k or v held NaN or Inf
    compared: int = 0  # samples compared with float64 math
    max_rel_error: dict[str, float] = field(default_factory=dict)
    tolerance: float | None = None
    note: str = ""  # why it was not (or not fully) compared
    repro: str = ""  # the folder a flagged call's tensors were saved to
    replays: list[BackendReplay] = field(default_factory=list)  # filled by the parent after the program exits

    @property
    def backend_nonfinite(self) -> bool:
        return any(self.nonfinite.values())

    @property
    def out_of_tolerance(self) -> bool:
        return self.tolerance is not None and any(e > self.tolerance for e in self.max_rel_error.values())

    @property
    def ok(self) -> bool | None:
        """False: the backend's gradients were non-finite or beyond the tolerance; None: nothing read yet."""
        if self.backend_nonfinite or self.out_of_tolerance:
            return False
        return True if self.samples else None

    @property
    def blame(self) -> str:
        """Where a non-finite gradient began, or "" when none was seen."""
        if self.backend_nonfinite:
            return BLAME_BACKEND
        if self.upstream_nonfinite:
            return BLAME_UPSTREAM
        if self.inputs_nonfinite:
            return BLAME_INPUTS
        return ""

    def summary(self) -> str:
        """One line: ``dq non-finite in 3 of 3 backwards (45,056 of 45,056 elements)`` or the errors."""
        if not self.samples:
            return self.note or "no backward sampled yet"
        bad = [g for g in GRADIENTS if self.nonfinite.get(g)]
        if bad:
            g = bad[0]
            first = f" ({self.first_bad.get(g, 0):,} of {self.elements.get(g, 0):,} elements)" if g in self.elements else ""
            return (f"{', '.join(bad)} non-finite in {self.nonfinite[g]} of {self.samples} sampled backward(s){first}: "
                    f"{BLAME_BACKEND}")
        parts = []
        if self.upstream_nonfinite or self.inputs_nonfinite:
            parts.append(f"{self.upstream_nonfinite or self.inputs_nonfinite} of {self.samples} backward(s) "
                         f"non-finite: {self.blame}, not the backend")
        if self.max_rel_error:
            errors = ", ".join(f"{g} {self.max_rel_error[g]:.1e}" for g in GRADIENTS if g in self.max_rel_error)
            verdict = "beyond" if self.out_of_tolerance else "within"
            parts.append(f"max rel err {errors}, {verdict} {self.tolerance:.0e} ({self.compared} compared)")
        elif not parts:
            parts.append(f"finite in {self.samples} sampled backward(s)")
        if self.note:
            parts.append(self.note)
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "ok": self.ok, "blame": self.blame or None, "nonfinite": dict(self.nonfinite),
                "first_bad": dict(self.first_bad), "elements": dict(self.elements),
                "upstream_nonfinite": self.upstream_nonfinite, "inputs_nonfinite": self.inputs_nonfinite,
                "compared": self.compared, "max_rel_error": dict(self.max_rel_error), "tolerance": self.tolerance,
                "note": self.note or None, "repro": self.repro or None,
                "replays": [r.to_dict() for r in self.replays]}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "GradientCheck | None":
        if not d:
            return None
        return cls(int(d.get("samples", 0)), _counts(d.get("nonfinite")), _counts(d.get("first_bad")),
                   _counts(d.get("elements")), int(d.get("upstream_nonfinite", 0)), int(d.get("inputs_nonfinite", 0)),
                   int(d.get("compared", 0)),
                   {g: float(v) for g, v in dict(d.get("max_rel_error") or {}).items() if g in GRADIENTS},
                   d.get("tolerance"), str(d.get("note") or ""), str(d.get("repro") or ""),
                   [BackendReplay.from_dict(r) for r in d.get("replays") or ()])

    def copy(self) -> "GradientCheck":
        return GradientCheck.from_dict(self.to_dict()) or GradientCheck()

    @classmethod
    def merged(cls, checks: Iterable["GradientCheck | None"]) -> "GradientCheck | None":
        """Every process's gradient checks of one signature as one (None when no process sampled a backward)."""
        present = [c for c in checks if c is not None]
        if not present:
            return None
        out = cls()
        for c in present:
            out.samples += c.samples
            out.upstream_nonfinite += c.upstream_nonfinite
            out.inputs_nonfinite += c.inputs_nonfinite
            out.compared += c.compared
            for g in GRADIENTS:
                if c.nonfinite.get(g):
                    out.nonfinite[g] = out.nonfinite.get(g, 0) + c.nonfinite[g]
                    out.first_bad.setdefault(g, c.first_bad.get(g, 0))
                if g in c.elements:
                    out.elements.setdefault(g, c.elements[g])
                if g in c.max_rel_error:
                    out.max_rel_error[g] = max(out.max_rel_error.get(g, 0.0), c.max_rel_error[g])
            out.tolerance = out.tolerance or c.tolerance
            out.note = out.note or c.note
            out.repro = out.repro or c.repro
            out.replays = out.replays or list(c.replays)
        return out


def replay_advice(replays: Iterable[BackendReplay], current: str | None) -> str:
    """The cheapest backend whose gradients were clean on the flagged call's own tensors, what it costs per call
    against the one that ran, and the line that selects it; or why there is none."""
    replays = list(replays)
    clean = sorted((r for r in replays if r.clean and r.us is not None), key=lambda r: r.us or 0.0)
    if not clean:
        return "no backend gave clean gradients on these tensors: the inputs themselves may be at fault"
    best = clean[0]
    ran = next((r for r in replays if r.backend == current), None)
    cost = ""
    if ran is not None and ran.us is not None and best.us is not None:
        delta = best.us - ran.us
        cost = f", {abs(delta):,.1f} µs per call {'more' if delta > 0 else 'less'} than {current}"
    others = [r.backend for r in clean[1:]]
    order = ", ".join(f"SDPBackend.{b}" for b in [best.backend, *others])
    line = (f"use {best.backend} (clean, {best.us:,.1f} µs per call forward+backward{cost}): around the call, "
            f"`with sdpa_kernel([{order}], set_priority=True):`")
    switch = SWITCHES.get(current or "")
    return f"{line}; or for the whole program, `{switch}(False)`" if switch else line


SWITCHES = {"CUDNN_ATTENTION": "torch.backends.cuda.enable_cudnn_sdp",
            "FLASH_ATTENTION": "torch.backends.cuda.enable_flash_sdp",
            "EFFICIENT_ATTENTION": "torch.backends.cuda.enable_mem_efficient_sdp",
            "MATH": "torch.backends.cuda.enable_math_sdp"}
"""The global switch of each backend (torch's own names; the CPU's Flash obeys ``enable_flash_sdp`` too)."""
