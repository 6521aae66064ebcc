"""What ``sdpa-tui watch`` saw a program do: one row per distinct SDPA call signature (plain data, no torch).

Rows merge the :class:`ProcessState` of every watched process. ``watch --report`` writes
:meth:`WatchReport.to_dict` (schema 2; schema 1 had ``gpu_us``, a CUDA-event span around the
call, which is gone: it timed how long the stream took, idle gaps and plan building included).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ..backends import ALL_BACKENDS
from ..dispatch_environment import DispatchEnvironment
from ..stats import Summary
from .advice import AdviceProgress, HostLead, RunAdvice, SignatureAdvice
from .call_signature import CallSignature
from .compiled_twins import EagerTwin, eager_twin
from .flex_alternative import FLEX, FLEX_LABEL
from .host_pace import BatchLeads, TypicalBatch, typical_batch
from .mask_forms import OTHER
from .module_paths import collapse
from .packed_alternative import LABELS as PACKED_LABELS
from .rank_rows import RankCell, merge_key, per_rank, rank_note
from .watched_calls import CallStats, Captures, OutputCheck, ProcessState, UninspectedCalls

SCHEMA_VERSION = 2
NOT_INTERCEPTED_NOTE = (
    "calls inside torch.compile'd graphs are counted from the graphs Dynamo builds (each run of a graph "
    "counts its SDPA calls); attention that Inductor makes out of a matmul-softmax-matmul is not"
)
KERNEL_CLOCK = ("kernel time: the summed CUPTI durations of the kernels, memsets and copies launched inside "
                "one call, first call excluded; share of GPU: this call's kernel time over all of the "
                "program's GPU time in the profiled windows")


CONTENDED_SHARE = 0.1
"""A row whose calls ran on a host busy beyond the program this often or more is marked: its times may read high."""
CONTENDED_MARK = "*"
"""Follows a time measured while the host was busy beyond the program."""


def backend_label(name: str | None) -> str:
    """``FLASH_ATTENTION`` → ``Flash``, ``FLEX_ATTENTION`` → ``FlexAttention``; unknown names pass through."""
    if name is None:
        return "none"
    if name == FLEX:
        return FLEX_LABEL
    if name in PACKED_LABELS:
        return PACKED_LABELS[name]
    for backend in ALL_BACKENDS:
        if backend.value == name:
            return backend.label
    return name


def _summary_dict(summary: Summary | None) -> dict[str, Any]:
    if summary is None:
        return {"median": None, "p90": None, "n": 0}
    return {"median": round(summary.median, 3), "p90": round(summary.p90, 3), "n": summary.count}


@dataclass(frozen=True)
class BackwardRow:
    backend: str | None
    kernel_us: Summary | None
    kernels: tuple[str, ...]
    lead_us: Summary | None = None  # how far ahead of the GPU the host launched the backward (CallRow.lead_us)

    def to_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "kernel_us": _summary_dict(self.kernel_us), "kernels": list(self.kernels),
                "lead_us": _summary_dict(self.lead_us)}


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
    kernel_us: Summary | None  # per call, CUPTI
    host_us: Summary | None  # CPU runs
    kernels: tuple[str, ...]
    pids: tuple[int, ...]
    first_call_us: float | None = None
    backward: BackwardRow | None = None
    modules: tuple[str, ...] = ()
    module_count: int = 0  # the distinct modules seen making this call (``modules`` collapses them)
    compiled: bool = False
    count_exact: bool = True
    compiled_fn: str = ""
    eager_backend: str | None = None
    mask_causal: bool = False  # its mask was exactly causal at the first call: ``is_causal=True`` is equivalent
    check: OutputCheck | None = None  # sampled outputs against float64 MATH
    share: float | None = None  # of the program's SDPA time (forward and backward), by count × median
    share_of_gpu: float | None = None  # of all the program's GPU time in the profiled windows
    calls_per_s: float | None = None
    per_rank: dict[int, RankCell] = field(default_factory=dict)  # distributed jobs: each rank's part
    rank_note: str = ""  # a rank that ran another backend or whose time is off the others'
    decomposed: bool = False  # compiled: MATH chosen at the trace, run as the compiler's own ops (no SDPA kernel)
    eager_twin: EagerTwin | None = None  # compiled: eager calls of the same modules with another backend or mask
    mask_strides: tuple[int, ...] | None = None  # compiled: the mask's strides in the graph
    sites: tuple[tuple[str, int], ...] = ()  # every call site and its calls, the busiest first
    sites_sampled: bool = False  # the per-site counts are estimated from sampled calls
    contended_calls: int = 0  # made while the host was busy beyond the program: their times read high
    mask_form: str = ""  # its mask as core/calls/mask_forms names it, read at the first call ("": not read)
    lengths: tuple[dict[int, int], ...] = ()  # key padding: sampled batches' real lengths, as histograms
    layouts: tuple[str, ...] = ()  # Q, K, V in memory at the first call (CallStats.layouts)
    lead_us: Summary | None = None  # how far ahead of the GPU the host made the call (CallStats.lead_us)
    lead_batches: tuple[BatchLeads, ...] = ()  # batches read whole, every process's (CallStats.lead_batches)

    @property
    def contended(self) -> bool:
        """Enough of its calls ran on a busy host that its times may read high."""
        return self.contended_calls > 0 and self.contended_calls >= CONTENDED_SHARE * self.count

    @property
    def time_mark(self) -> str:
        """Follows its time where that was measured while the host was busy beyond the program."""
        return CONTENDED_MARK if self.contended and (self.kernel_us or self.host_us) else ""

    @property
    def host_lead(self) -> HostLead | None:
        """How far ahead of the GPU the program's host launched this call and its backward, where profiled."""
        back = self.backward.lead_us if self.backward else None
        if not (self.lead_us or back):
            return None
        forward, backward = self.kernel_us, self.backward.kernel_us if self.backward else None
        share = forward.median / (forward.median + backward.median) if forward and backward else None
        return HostLead(self.lead_us, back, typical_batch(self.lead_batches), share)

    @property
    def backward_us(self) -> float | None:
        back = self.backward
        return back.kernel_us.median if back is not None and back.kernel_us is not None else None

    @property
    def ranks(self) -> tuple[int, ...]:
        return tuple(self.per_rank)

    def for_rank(self, rank: int) -> "CallRow":
        """This row as one rank made it: its count, backend and time (the rest as merged)."""
        cell = self.per_rank[rank]
        rate = self.calls_per_s * cell.count / self.count if self.calls_per_s and self.count else None
        return replace(self, count=cell.count, backend=cell.backend or self.backend, kernel_us=cell.kernel_us,
                       host_us=cell.host_us, calls_per_s=rate)

    @property
    def time_us(self) -> float | None:
        """One call's cost, forward and backward where both were measured: the GPU's, else the host's."""
        if self.kernel_us is not None:
            return self.kernel_us.median + (self.backward_us or 0.0)
        return self.host_us.median if self.host_us is not None else None

    def report_dict(self) -> dict[str, Any]:
        s = self.signature
        return {
            "site": self.site, "module": self.module, "modules": list(self.modules), "module_count": self.module_count,
            "q_shape": list(s.q_shape), "kv_shape": list(s.kv_shape), "dtype": s.dtype, "device": s.device,
            "mask": {"kind": s.mask, "shape": list(s.mask_shape) if s.mask_shape is not None else None,
                     "form": self.mask_form or None,
                     **({"strides": list(self.mask_strides)} if self.mask_strides is not None else {})},
            "causal": s.causal, "dropout_p": s.dropout_p, "scale": s.scale, "gqa": s.gqa, "grad": s.grad,
            "flags": list(s.flags), "priority": list(s.priority), "compiled": self.compiled,
            "compiled_fn": self.compiled_fn or None, "count": self.count, "count_exact": self.count_exact,
            "calls_per_s": self.calls_per_s, "backend": self.backend, "eager_backend": self.eager_backend,
            "mask_causal": self.mask_causal, "check": self.check.to_dict() if self.check else None,
            "choice_error": self.choice_error or None, "why_not": dict(self.why_not),
            "kernel_us": _summary_dict(self.kernel_us), "first_call_us": self.first_call_us,
            "host_us": _summary_dict(self.host_us), "kernels": list(self.kernels),
            "backward": self.backward.to_dict() if self.backward else None,
            "share": self.share, "share_of_gpu": self.share_of_gpu, "pids": list(self.pids),
            "ranks": list(self.ranks), "per_rank": {str(r): c.to_dict() for r, c in self.per_rank.items()},
            "rank_note": self.rank_note or None, "decomposed": self.decomposed,
            "eager_twin": self.eager_twin.to_dict() if self.eager_twin else None,
            "sites": [{"site": site, "count": n} for site, n in self.sites], "sites_sampled": self.sites_sampled,
            "contended_calls": self.contended_calls, "contended": self.contended,
            "lengths": [{str(n): times for n, times in h.items()} for h in self.lengths],
            "layouts": list(self.layouts), "lead_us": _summary_dict(self.lead_us),
            "lead_batch": _batch_dict(typical_batch(self.lead_batches)),
        }


def _batch_dict(batch: TypicalBatch | None) -> dict[str, Any] | None:
    if batch is None:
        return None
    return {"forward_us": [round(x, 1) for x in batch.forward], "backward_us": [round(x, 1) for x in batch.backward],
            "batches": batch.batches}


def _backward(items: list[CallStats]) -> BackwardRow | None:
    backs = [st.backward for st in items if st.backward is not None]
    if not backs:
        return None
    kernels = next((b.kernels for b in backs if b.kernels), [])
    backend = next((b.backend for b in backs if b.backend), None)
    return BackwardRow(backend, Summary.of(x for b in backs for x in b.kernel_us), tuple(kernels),
                       Summary.of(x for b in backs for x in b.lead_us))


def merged_sites(stats: Iterable[CallStats]) -> tuple[tuple[str, int], ...]:
    """Each call site of one signature with its calls over every process, the busiest first."""
    totals: dict[str, float] = {}
    for st in stats:
        for site, n in st.site_counts().items():
            totals[site] = totals.get(site, 0.0) + n
    return tuple(sorted(((site, round(n)) for site, n in totals.items()), key=lambda item: -item[1]))


def merged_uninspected(states: Iterable[ProcessState]) -> list[UninspectedCalls]:
    """The calls no process could inspect, one entry per entry point, summed over processes."""
    paths: dict[str, UninspectedCalls] = {}
    for state in states:
        for calls in state.uninspected:
            into = paths.setdefault(calls.path, UninspectedCalls(calls.path, why=calls.why))
            into.count += calls.count
            for site, n in calls.sites.items():
                into.sites[site] = into.sites.get(site, 0) + n
            into.modules.extend(m for m in calls.modules if m not in into.modules)
    return list(paths.values())


def _one_form(forms: Iterable[str]) -> str:
    """The processes' mask forms of one signature: theirs where they agree, ``other`` where they do not."""
    found = set(forms)
    return found.pop() if len(found) == 1 else OTHER if found else ""


def merge(states: Iterable[ProcessState], elapsed_s: float | None = None) -> list[CallRow]:
    """Rows, one per signature (eager and compiled apart), summed over processes, the busiest share first."""
    states = list(states)
    grouped: dict[tuple[CallSignature, bool], list[tuple[ProcessState, CallStats]]] = {}
    for state in states:
        for call in state.calls:
            grouped.setdefault((merge_key(call.signature, state), call.compiled), []).append((state, call))
    profiled_gpu_us = sum(s.captures.gpu_us for s in states)
    rows = []
    for (signature, compiled), items in grouped.items():
        first = items[0][1]
        stats = [st for _, st in items]
        count = sum(st.count for st in stats)
        firsts = [st.first_call_us for st in stats if st.first_call_us is not None]
        profiled = sum(st.profiled_us for st in stats)
        rows.append(CallRow(
            signature=signature, count=count, site=first.site, module=first.module,
            backend=next((st.backend for st in stats if st.backend), None), choice_error=first.choice_error,
            why_not=dict(first.why_not), kernel_us=Summary.of(x for st in stats for x in st.kernel_us),
            host_us=Summary.of(x for st in stats for x in st.host_us),
            kernels=tuple(next((st.kernels for st in stats if st.kernels), ())),
            pids=tuple(sorted({state.pid for state, _ in items})), first_call_us=max(firsts) if firsts else None,
            backward=_backward(stats), modules=tuple(collapse(m for st in stats for m in st.modules)),
            module_count=len({m for st in stats for m in st.modules if m}),
            compiled=compiled, count_exact=all(st.count_exact for st in stats),
            compiled_fn=first.compiled_fn, eager_backend=first.eager_backend,
            mask_causal=all(st.mask_causal for st in stats), check=OutputCheck.merged(st.check for st in stats),
            share_of_gpu=profiled / profiled_gpu_us if profiled_gpu_us > 0 and profiled else None,
            calls_per_s=count / elapsed_s if elapsed_s else None, per_rank=(cells := per_rank(items)),
            rank_note=rank_note(cells), decomposed=compiled and all(st.decomposed for st in stats),
            mask_strides=first.mask_strides, sites=merged_sites(stats),
            sites_sampled=any(st.sites_sampled for st in stats), contended_calls=sum(st.contended_calls for st in stats),
            mask_form=_one_form(st.mask_form for st in stats), lengths=tuple(h for st in stats for h in st.lengths),
            layouts=first.layouts, lead_us=Summary.of(x for st in stats for x in st.lead_us),
            lead_batches=tuple(b for st in stats for b in st.lead_batches),
        ))
    rows = [replace(r, eager_twin=eager_twin(r, rows)) if r.compiled else r for r in rows]
    total = sum(r.count * r.time_us for r in rows if r.time_us is not None)
    if total > 0:
        rows = [replace(r, share=r.count * r.time_us / total if r.time_us is not None else None) for r in rows]
    return sorted(rows, key=lambda r: (-(r.share or 0.0), -r.count))


@dataclass
class WatchReport:
    """``watch --report``'s JSON: ``{"schema_version", "program", "exit_code", "calls": [...], ...}``."""

    program: list[str]
    exit_code: int | None
    rows: list[CallRow]
    duration_s: float
    compiled: list[str] = field(default_factory=list)
    compiled_kernels: list[str] = field(default_factory=list)
    kernels_note: str = ""
    error: str = ""
    notes: list[str] = field(default_factory=list)
    captures: Captures = field(default_factory=Captures)
    environment: DispatchEnvironment | None = None  # what decides dispatch, as the (first) watched process read it
    advice: list[SignatureAdvice | None] = field(default_factory=list)  # one per row, measured after the run
    run_advice: RunAdvice | None = None
    advice_measured: str = ""  # when and how long the alternatives were measured ("" before)
    advice_left_out: list[str] = field(default_factory=list)  # what was not measured or advised, and why
    uninspected: list[UninspectedCalls] = field(default_factory=list)  # calls that reached SDPA inside C++
    contention: str = ""  # the host busy beyond the program now, in words (a running program)
    contention_seen: str = ""  # its busiest interval over the run

    @property
    def advice_note(self) -> str:
        """When and how long the alternatives were measured, then what was left out: one line."""
        return "; ".join([self.advice_measured, *self.advice_left_out]) if self.advice_measured else ""

    @property
    def sdpa_share_of_gpu(self) -> float | None:
        """SDPA's share (forward and backward, every signature) of the program's GPU time in the profiled windows."""
        shares = [r.share_of_gpu for r in self.rows if r.share_of_gpu is not None]
        return sum(shares) if shares else None

    def _call_dict(self, i: int) -> dict[str, Any]:
        row = self.rows[i]
        return _with_advice(row.report_dict(), self.advice[i] if i < len(self.advice) else None, row.count)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION, "program": list(self.program), "exit_code": self.exit_code,
            "duration_s": round(self.duration_s, 3), "calls": [self._call_dict(i) for i in range(len(self.rows))],
            "sdpa_share_of_gpu": self.sdpa_share_of_gpu, "captures": self.captures.to_dict(),
            "advice": None if self.run_advice is None else {**self.run_advice.to_dict(), "note": self.advice_note},
            "clocks": KERNEL_CLOCK,
            "compiled": {
                "functions": list(self.compiled), "attention_kernels": list(self.compiled_kernels),
                "note": NOT_INTERCEPTED_NOTE if self.compiled else None,
            },
            "kernels_note": self.kernels_note or None, "error": self.error or None, "notes": list(self.notes),
            "environment": self.environment.to_dict() if self.environment else None,
            "uninspected": [u.to_dict() for u in self.uninspected],
            "contention": self.contention_seen or None,
        }

    def to_json(self) -> str:
        """``watch --report``'s file: :meth:`to_dict` indented, one final newline."""
        return json.dumps(self.to_dict(), indent=2) + "\n"


def _with_advice(call: dict[str, Any], advice: SignatureAdvice | None, count: int) -> dict[str, Any]:
    """A row of ``calls[]`` with its advice: ``alternatives``, ``best``, ``saving_us_per_call`` and the rest."""
    if advice is None:
        return {**call, "alternatives": None, "best": None, "saving_us_per_call": None, "advice": None}
    detail = advice.to_dict(count)
    return {**call, "alternatives": detail.pop("alternatives"), "best": detail.pop("best"),
            "saving_us_per_call": detail.pop("saving_us_per_call"), "advice": detail}


def build_report(program: list[str], exit_code: int | None, states: Iterable[ProcessState],
                 duration_s: float, notes: Iterable[str] = ()) -> WatchReport:
    states = list(states)
    captures = Captures.total(s.captures for s in states)
    # the traceback of the process that failed first-hand before those ended because of it (SIGTERM)
    failed = sorted((s for s in states if s.error), key=lambda s: not s.error.startswith("Traceback"))
    errors = [s.error for s in failed]
    others = [f"{_who(s)}: {s.error.strip().splitlines()[-1]}" for s in failed[1:]]
    read = sorted((s for s in states if s.environment), key=lambda s: (s.rank is None, s.rank or 0, s.pid))
    environment = read[0].environment if read else None
    others += [f"{_who(s)}: dispatch environment differs: {'; '.join(s.environment.notes()) or 'as installed'}"
               for s in read[1:] if s.environment is not None and s.environment != environment]
    others += [f"{_who(s)} changed the dispatch environment while it ran: "
               f"{'; '.join(s.environment_end.notes()) or 'back to as installed'}" for s in states if s.environment_end]
    return WatchReport(
        program=program, exit_code=exit_code, rows=merge(states, duration_s), duration_s=duration_s,
        compiled=list(dict.fromkeys(c for s in states for c in s.compiled)),
        compiled_kernels=list(dict.fromkeys(k for s in states for k in s.compiled_kernels)),
        kernels_note=next((s.kernels_note for s in states if s.kernels_note), ""),
        error=errors[0] if errors else "", notes=[*notes, *others], captures=captures, environment=environment,
        uninspected=merged_uninspected(states),
    )


def _who(state: ProcessState) -> str:
    return f"rank {state.rank} (pid {state.pid})" if state.rank is not None else f"pid {state.pid}"



class Advisor(Protocol):
    """Measures each row's alternatives after the program exited and fills ``report.advice``
    (``watch/advice/advise.py``, given by the top-level CLI to watch's headless run and to the Calls view's ``b``: the
    engine it starts is above their layers); ``say`` hears its messages and ``progress`` where it stands (an
    ``advice.AdviceProgress``; both on stderr where neither is given); ``flex``: FlexAttention is measured too;
    ``budget_s``: how long it may take (None: its default for the program's run)."""

    def __call__(self, report: WatchReport, say: Callable[[str], None] | None = None, flex: bool = True,
                 progress: Callable[[AdviceProgress], None] | None = None, budget_s: float | None = None) -> None: ...
