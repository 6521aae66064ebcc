"""What one watched process knows about its SDPA calls, as sent to ``sdpa-tui watch`` (plain data, no torch).

The watched process sends :class:`ProcessState` records as JSON lines; the parent merges them
(one program may be several processes) into the rows of :mod:`watch_report`.

Clocks: ``kernel_us`` holds one value per profiled call, the summed CUPTI durations of the
kernels, memsets and copies launched inside that call (the lab's kernel clock); a signature's
first call in a process is never among them (``first_call_us`` is its host time: plan
building, autotuning). ``host_us`` is the host's clock around a call, kept only on the CPU,
where the call's work is done on the calling thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..dispatch_environment import DispatchEnvironment
from .call_signature import CallSignature
from .gradient_check import GradientCheck
from .host_pace import BatchLeads

WIRE_VERSION = 2
READABLE_WIRE_VERSIONS = frozenset({1, WIRE_VERSION})  # 1: before kernel clocks (its event spans are dropped)
CPU_KERNELS_NOTE = "no GPU kernels on the CPU"
MAX_FAILURES = 8


def _floats(values: Any) -> list[float]:
    return [float(x) for x in values or ()]


def lengths_from(value: Any) -> list[dict[int, int]]:
    """Lengths histograms as JSON has them (lengths as text keys)."""
    return [{int(n): int(times) for n, times in h.items()} for h in value or ()]


@dataclass
class BackwardStats:
    """The gradient of a signature's profiled calls: the backend that ran it, its time, its kernels."""

    backend: str | None = None
    kernel_us: list[float] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)
    # per profiled backward: how far ahead of the GPU autograd's thread launched its first kernel (in a window: the
    # profiler slows the host, so the program's own lead is at least this)
    lead_us: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "kernel_us": list(self.kernel_us), "kernels": list(self.kernels),
                "lead_us": list(self.lead_us)}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "BackwardStats | None":
        if not d:
            return None
        return cls(d.get("backend"), _floats(d.get("kernel_us")), list(d.get("kernels", ())), _floats(d.get("lead_us")))


OUTPUT_TOLERANCE = {"torch.float16": 5e-3, "torch.bfloat16": 3e-2, "torch.float32": 2e-3, "torch.float64": 1e-10}
"""Largest max |out - ref| / max |ref| that passes: above the lab's measured errors of every backend at the
dtype (H100, torch 2.11, tests/fixtures/reports/h100-torch2.11: fp16 at most 3.3e-4 in report-small.json, bf16
at most 1.9e-3 in report-8k.json; fp32 leaves room for TF32 matmuls in MATH on a GPU)."""


@dataclass
class OutputCheck:
    """A signature's sampled output check (``watch/probe/checks/output_check.py``): calls compared with float64 MATH."""

    samples: int = 0
    nonfinite: int = 0  # checked calls whose output held NaN or Inf
    max_abs_error: float | None = None
    max_rel_error: float | None = None  # max |out - ref| / max |ref|
    tolerance: float | None = None
    ok: bool | None = None  # None: nothing compared yet
    note: str = ""  # why it was not (or not fully) checked
    masked_rows: int = 0  # query rows of the largest checked call whose every key was masked: not compared
    masked_rows_max: float | None = None  # the largest |output| written on them (float64 MATH writes 0)
    backward: GradientCheck | None = None  # calls that require grad: their sampled backwards

    @property
    def failed(self) -> bool:
        """The sampled outputs, or the gradients the backend's backward produced, failed the check."""
        return self.ok is False or (self.backward is not None and self.backward.ok is False)

    def to_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "nonfinite": self.nonfinite, "max_abs_error": self.max_abs_error,
                "max_rel_error": self.max_rel_error, "tolerance": self.tolerance, "ok": self.ok,
                "note": self.note or None, "masked_rows": self.masked_rows, "masked_rows_max": self.masked_rows_max,
                "backward": self.backward.to_dict() if self.backward else None}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "OutputCheck":
        d = d or {}
        return cls(int(d.get("samples", 0)), int(d.get("nonfinite", 0)), d.get("max_abs_error"),
                   d.get("max_rel_error"), d.get("tolerance"), d.get("ok"), str(d.get("note") or ""),
                   int(d.get("masked_rows") or 0), d.get("masked_rows_max"), GradientCheck.from_dict(d.get("backward")))

    @classmethod
    def merged(cls, checks: Iterable["OutputCheck"]) -> "OutputCheck":
        """Every process's checks of one signature as one."""
        checks = list(checks)
        errors = [c.max_abs_error for c in checks if c.max_abs_error is not None]
        rels = [c.max_rel_error for c in checks if c.max_rel_error is not None]
        verdicts = [c.ok for c in checks if c.ok is not None]
        return cls(sum(c.samples for c in checks), sum(c.nonfinite for c in checks), max(errors, default=None),
                   max(rels, default=None), next((c.tolerance for c in checks if c.tolerance), None),
                   all(verdicts) if verdicts else None, next((c.note for c in checks if c.note), ""),
                   max((c.masked_rows for c in checks), default=0),
                   max((c.masked_rows_max for c in checks if c.masked_rows_max is not None), default=None),
                   GradientCheck.merged(c.backward for c in checks))


LAYOUTS = {"bhld": "contiguous as passed: [batch, heads, length, head dim]",
           "blhd": "a [batch, length, heads, head dim] tensor transposed (transformers' queries)"}
"""How the probe names a Q, K or V's place in memory (``""``: any other strides)."""

ELIGIBLE = "eligible"
"""How a why-not reason (``CallStats.why_not``, written by ``watch/probe/explain/choice.py``) starts when torch would
run the backend for the call (behind the pick)."""
FLAG_OFF = "its flag is off at this call"
"""How it starts when only the backend's flag keeps it from the call."""


@dataclass
class CallStats:
    """One signature in one process: what the probe knows about it."""

    signature: CallSignature
    count: int = 0
    site: str = "?"
    module: str | None = None  # the first call's module
    backend: str | None = None  # the SDPBackend name SDPA chose (compiled: the graph's), or None and ``choice_error``
    choice_error: str = ""
    why_not: dict[str, str] = field(default_factory=dict)
    kernel_us: list[float] = field(default_factory=list)  # per profiled call (CUPTI), first call excluded
    host_us: list[float] = field(default_factory=list)  # host time per call, CPU runs only
    kernels: list[str] = field(default_factory=list)  # one profiled call's own activities, in launch order
    first_call_us: float | None = None  # host time of the first call (plan building, autotuning)
    backward: BackwardStats | None = None
    modules: list[str] = field(default_factory=list)  # every module seen making this call
    profiled_us: float = 0.0  # this signature's GPU time (forward and backward) in the profiled windows
    compiled: bool = False  # runs inside a torch.compile'd graph
    count_exact: bool = True
    compiled_fn: str = ""  # the compiled function (compiled rows)
    eager_backend: str | None = None  # compiled rows: what eager SDPA picks for the same arguments
    mask_causal: bool = False  # the first call's mask was exactly causal (is_causal=True would do the same)
    check: OutputCheck = field(default_factory=OutputCheck)
    decomposed: bool = False  # compiled rows: SDPA chose MATH at the trace, the compiler runs it as its own ops
    mask_strides: tuple[int, ...] | None = None  # compiled rows: the mask's strides in the graph (0: expanded)
    # calls per call site: the first calls each count 1, later ones are sampled and each stands for the calls
    # between samples (``sites_sampled``); empty in records from before sites were counted: all at ``site``
    sites: dict[str, int] = field(default_factory=dict)
    sites_sampled: bool = False
    contended_calls: int = 0  # made while the host was busy beyond the program (counted by the parent, not sent)
    mask_form: str = ""  # the first call's mask, as core/calls/mask_forms names it ("": not read)
    # key-padding masks: the real lengths of sampled calls' batches, each as a histogram (length -> sequences)
    lengths: list[dict[int, int]] = field(default_factory=list)
    layouts: tuple[str, ...] = ()  # Q, K, V in memory at the first call (LAYOUTS; "": other)
    # per read call: how far ahead of the GPU the host was when it made the call (µs; 0: the GPU waited for it, the
    # host is the program's bottleneck there), read outside the profiler's windows (``watch/probe/host_lead.py``)
    lead_us: list[float] = field(default_factory=list)
    # batches read whole after an anchor: the lead at each of their calls in order, and at each one's backward
    lead_batches: list[BatchLeads] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mask_causal": self.mask_causal, "check": self.check.to_dict(), "decomposed": self.decomposed,
            "sites": dict(self.sites), "sites_sampled": self.sites_sampled,
            "mask_strides": None if self.mask_strides is None else list(self.mask_strides),
            "signature": self.signature.to_dict(), "count": self.count, "site": self.site,
            "module": self.module, "backend": self.backend, "choice_error": self.choice_error,
            "why_not": dict(self.why_not), "kernel_us": list(self.kernel_us), "host_us": list(self.host_us),
            "kernels": list(self.kernels), "first_call_us": self.first_call_us,
            "backward": self.backward.to_dict() if self.backward else None, "modules": list(self.modules),
            "profiled_us": self.profiled_us, "compiled": self.compiled, "count_exact": self.count_exact,
            "compiled_fn": self.compiled_fn, "eager_backend": self.eager_backend,
            "contended_calls": self.contended_calls, "mask_form": self.mask_form,
            "lengths": [{str(n): times for n, times in h.items()} for h in self.lengths],
            "layouts": list(self.layouts), "lead_us": list(self.lead_us),
            "lead_batches": [b.to_dict() for b in self.lead_batches],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CallStats":
        first = d.get("first_call_us")
        return cls(
            signature=CallSignature.from_dict(d["signature"]), count=int(d.get("count", 0)),
            site=str(d.get("site", "?")), module=d.get("module"), backend=d.get("backend"),
            choice_error=str(d.get("choice_error", "")), why_not=dict(d.get("why_not", {})),
            kernel_us=_floats(d.get("kernel_us")), host_us=_floats(d.get("host_us")),
            kernels=list(d.get("kernels", ())), first_call_us=None if first is None else float(first),
            backward=BackwardStats.from_dict(d.get("backward")), modules=list(d.get("modules", ())),
            profiled_us=float(d.get("profiled_us", 0.0)), compiled=bool(d.get("compiled", False)),
            count_exact=bool(d.get("count_exact", True)), compiled_fn=str(d.get("compiled_fn", "")),
            eager_backend=d.get("eager_backend"), mask_causal=bool(d.get("mask_causal", False)),
            check=OutputCheck.from_dict(d.get("check")), decomposed=bool(d.get("decomposed", False)),
            mask_strides=None if d.get("mask_strides") is None else tuple(int(x) for x in d["mask_strides"]),
            sites={str(site): int(n) for site, n in (d.get("sites") or {}).items()},
            sites_sampled=bool(d.get("sites_sampled", False)),
            contended_calls=int(d.get("contended_calls") or 0), mask_form=str(d.get("mask_form") or ""),
            lengths=lengths_from(d.get("lengths")), layouts=tuple(str(x) for x in d.get("layouts") or ()),
            lead_us=_floats(d.get("lead_us")),
            lead_batches=[BatchLeads.from_dict(b) for b in d.get("lead_batches") or ()],
        )

    def site_counts(self) -> dict[str, float]:
        """Calls per site, summing to ``count``: as noted, or scaled from the samples."""
        noted = sum(self.sites.values())
        if not noted:
            return {self.site: float(self.count)}
        scale = self.count / noted if self.sites_sampled else 1.0
        return {site: n * scale for site, n in self.sites.items()}


INSIDE_CPP = "SDPA runs inside C++ there"
NESTED_SHAPES = "SDPA ran on nested tensors there, whose jagged shapes no signature holds"
"""Why calls are counted but not inspected (``UninspectedCalls.why``)."""


@dataclass
class UninspectedCalls:
    """Attention watch counts but cannot inspect: SDPA reached inside C++ (``nn.MultiheadAttention``'s fast path),
    never through the Python function watch rebinds, or SDPA on nested tensors, whose jagged shapes no signature
    holds: counted where it enters, its backend, time and kernels unseen; ``why`` (:data:`INSIDE_CPP`,
    :data:`NESTED_SHAPES`) says which."""

    path: str  # the entry point, in words: "nn.MultiheadAttention's fast path (torch._native_multi_head_attention)"
    count: int = 0
    sites: dict[str, int] = field(default_factory=dict)  # the first calls' sites
    modules: list[str] = field(default_factory=list)  # the first calls' modules
    why: str = INSIDE_CPP

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "count": self.count, "sites": dict(self.sites), "modules": list(self.modules),
                "why": self.why}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "UninspectedCalls":
        return cls(str(d["path"]), int(d.get("count", 0)), {str(k): int(v) for k, v in (d.get("sites") or {}).items()},
                   [str(m) for m in d.get("modules", ())], str(d.get("why") or INSIDE_CPP))


@dataclass
class Captures:
    """The profiler windows a process ran: how many, how long they profiled, what starting, stopping and exporting
    them cost, and what went wrong (a window that could not start, stop or be read; one whose calls showed no GPU
    work). ``cost_s``: what the windows cost the program (watch's budget for the windows it need not run)."""

    count: int = 0
    profiled_s: float = 0.0  # the program ran under the profiler this long
    stop_s: float = 0.0  # the calling thread waited this long for the profiler to stop
    read_s: float = 0.0  # the background thread spent this long reading the traces
    gpu_us: float = 0.0  # every GPU activity of the process inside the windows
    no_gpu: int = 0  # windows whose SDPA calls on CUDA showed no GPU activity at all
    untimed: int = 0  # windows the profiler returned with GPU records untimed (their calls are left out)
    detached: int = 0  # windows after which Kineto was told to detach CUPTI (watch/probe/kernels/cupti_detach.py)
    failures: list[str] = field(default_factory=list)  # the first MAX_FAILURES, one line each
    start_s: float = 0.0  # the calling thread waited this long for the profiler to start (CUPTI attached again)
    export_s: float = 0.0  # the traces took this long to export (Kineto holds the GIL: the program's threads wait)

    @property
    def cost_s(self) -> float:
        return self.start_s + self.profiled_s + self.stop_s + self.export_s

    def failed(self, what: str, exc: BaseException) -> None:
        if len(self.failures) < MAX_FAILURES:
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            self.failures.append(f"{what}: {type(exc).__name__}: {first}")

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "profiled_s": round(self.profiled_s, 4), "stop_s": round(self.stop_s, 4),
                "read_s": round(self.read_s, 4), "gpu_us": self.gpu_us, "no_gpu": self.no_gpu,
                "untimed": self.untimed, "detached": self.detached, "failures": list(self.failures),
                "start_s": round(self.start_s, 4), "export_s": round(self.export_s, 4)}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "Captures":
        d = d or {}
        return cls(int(d.get("count", 0)), float(d.get("profiled_s", 0.0)), float(d.get("stop_s", 0.0)),
                   float(d.get("read_s", 0.0)), float(d.get("gpu_us", 0.0)), int(d.get("no_gpu", 0)),
                   int(d.get("untimed", 0)), int(d.get("detached", 0)), [str(f) for f in d.get("failures", ())],
                   float(d.get("start_s", 0.0)), float(d.get("export_s", 0.0)))

    @classmethod
    def total(cls, many: Iterable["Captures"]) -> "Captures":
        out = cls()
        for c in many:
            out.count += c.count
            out.profiled_s += c.profiled_s
            out.stop_s += c.stop_s
            out.start_s += c.start_s
            out.export_s += c.export_s
            out.read_s += c.read_s
            out.gpu_us += c.gpu_us
            out.no_gpu += c.no_gpu
            out.untimed += c.untimed
            out.detached += c.detached
            out.failures.extend(c.failures)
        return out


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
    captures: Captures = field(default_factory=Captures)
    rank: int | None = None  # the process's rank in a distributed job (RANK, or torch.distributed's), if any
    local_rank: int | None = None
    host: str = ""
    environment: DispatchEnvironment | None = None  # as found at start, before the program's first line
    environment_end: DispatchEnvironment | None = None  # at its end, where the program changed it
    uninspected: list[UninspectedCalls] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "v": WIRE_VERSION, "pid": self.pid, "calls": [c.to_dict() for c in self.calls],
            "compiled": list(self.compiled), "compiled_kernels": list(self.compiled_kernels),
            "kernels_note": self.kernels_note, "final": self.final, "error": self.error, "time_s": self.time_s,
            "captures": self.captures.to_dict(), "rank": self.rank, "local_rank": self.local_rank, "host": self.host,
            "environment": self.environment.to_dict() if self.environment else None,
            "environment_end": self.environment_end.to_dict() if self.environment_end else None,
            "uninspected": [u.to_dict() for u in self.uninspected],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ProcessState":
        if d.get("v") not in READABLE_WIRE_VERSIONS:
            raise ValueError(f"watch channel version {d.get('v')!r}, expected {WIRE_VERSION}")
        return cls(
            pid=int(d["pid"]), calls=[CallStats.from_dict(c) for c in d.get("calls", ())],
            compiled=list(d.get("compiled", ())), compiled_kernels=list(d.get("compiled_kernels", ())),
            kernels_note=str(d.get("kernels_note", "")), final=bool(d.get("final", False)),
            error=str(d.get("error", "")), time_s=float(d.get("time_s", 0.0)),
            captures=Captures.from_dict(d.get("captures")), rank=_int_or_none(d.get("rank")),
            local_rank=_int_or_none(d.get("local_rank")), host=str(d.get("host") or ""),
            environment=DispatchEnvironment.from_dict(d["environment"]) if d.get("environment") else None,
            environment_end=DispatchEnvironment.from_dict(d["environment_end"]) if d.get("environment_end") else None,
            uninspected=[UninspectedCalls.from_dict(u) for u in d.get("uninspected", ())],
        )


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)
