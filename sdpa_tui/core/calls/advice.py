"""Measured advice for a watched call signature: what every eligible backend costs at the call's shape, which
beats the backend the call ran, what that saves over the run, and the code that gets it.

Pure: the measurements come as a lab :class:`~.session.Session` of the signature's workload (the engine measured
every backend there, forced). The verdict uses the lab's clock that decides :meth:`Session.faster` (GPU/call on a
GPU, eager on the CPU) and the same noise rule (:func:`.faster.beats`), so advice is only given beyond noise.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..backends import Backend
from ..lab.faster import beats, undecided
from ..lab.session import BackendRow, Session
from ..stats import Summary
from ..status import Status
from ..units import us_number
from .call_code import priority_code
from .compiled_twins import CompiledCost
from .host_pace import PhaseChange, TypicalBatch, gpu_wait_us
from .watched_calls import ELIGIBLE, FLAG_OFF

TOP = 3
"""The run summary names this many changes first."""


@dataclass(frozen=True)
class Alternative:
    """One way to run the signature, as the lab measured it."""

    variant: str  # "backend": the same call with SDPA forced to ``backend``
    backend: str
    us: float | None  # kernel time per call (the lab's kernel clock)
    gpu_us: float | None  # GPU/call (a CUDA graph's replays); None on the CPU
    eager_us: float | None  # host-timed per call in an eager loop
    error: float | None  # max |out - float64 MATH|
    peak_mib: float | None
    code: str
    leaves_sdpa: bool = False
    exact: bool = True  # False: the change alters the numerics (a lower precision); listed, never advised as best
    first_call_s: float | None = None  # what its first call of a shape costs once, apart (FlexAttention compiles)
    per_batch_us: float | None = None  # packed attention: its once-per-batch part, a share of it in each clock above
    calls_per_batch: int = 1  # the calls that share that part (one per module on the batch's mask)
    judged: str = ""  # code that leaves SDPA: the clock it was held against the call on, and why that one
    call_gpu_us: float | None = None  # code measured beside the call: the call's GPU/call there

    def to_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "backend": self.backend, "us": self.us, "gpu_us": self.gpu_us,
                "eager_us": self.eager_us, "error": self.error, "peak_mib": self.peak_mib, "code": self.code,
                "leaves_sdpa": self.leaves_sdpa, "exact": self.exact, "first_call_s": self.first_call_s,
                "per_batch_us": self.per_batch_us, "calls_per_batch": self.calls_per_batch,
                "judged": self.judged or None, "call_gpu_us": self.call_gpu_us}


@dataclass(frozen=True)
class SignatureAdvice:
    """The alternatives of one signature; ``best`` beats what the call ran beyond noise, or is None."""

    alternatives: tuple[Alternative, ...]
    current: str | None  # the backend the call ran
    clock: str  # "gpu" | "eager": the clock compared
    current_us: float | None  # the current backend on that clock, in the lab
    best: Alternative | None = None
    best_us: float | None = None
    measured_as: str = ""  # the lab's workload
    differences: tuple[str, ...] = ()  # what the lab does differently from the call
    note: str = ""  # why there is no advice, where there is none
    compiled_cost: CompiledCost | None = None  # a compiled call measured alone against its eager call

    @property
    def saving_us_per_call(self) -> float | None:
        if self.best is None or self.current_us is None or self.best_us is None:
            return None
        return self.current_us - self.best_us

    def to_dict(self, count: int) -> dict[str, Any]:
        saving = self.saving_us_per_call
        return {"alternatives": [a.to_dict() for a in self.alternatives], "current": self.current,
                "clock": self.clock, "current_us": self.current_us, "best": self.best.to_dict() if self.best else None,
                "best_us": self.best_us, "saving_us_per_call": saving,
                "saving_us": None if saving is None else saving * count, "measured_as": self.measured_as,
                "differences": list(self.differences), "note": self.note or None,
                "compiled_cost": self.compiled_cost.to_dict() if self.compiled_cost else None}


def _value(summary: Summary | None) -> float | None:
    return summary.median if summary else None


@dataclass(frozen=True)
class Rewrite:
    """A small change at the call site, measured as its own lab workload: SDPA's pick there is what it gets."""

    variant: str  # "is_causal" | "expand_kv" | "pad_head_dim" | "bf16"
    code: str
    session: Session
    exact: bool = True


def _rewritten(rewrite: Rewrite) -> tuple[Alternative, BackendRow] | None:
    pick = rewrite.session.dispatch.choice if rewrite.session.dispatch else None
    row = next((r for r in rewrite.session.rows() if r.backend is pick and r.status == Status.OK), None)
    if row is None:
        return None
    return Alternative(rewrite.variant, row.backend.value, _value(row.kernel_us), _value(row.gpu_us),
                       _value(row.eager_us), row.max_abs_error, row.peak_mib, rewrite.code,
                       exact=rewrite.exact), row


@dataclass(frozen=True)
class Beside:
    """Code that leaves SDPA, measured with the call beside it (the same process, the same inputs): the code's host
    time a call (``host``: launches only, its once-per-batch share in it) and the call's own clocks."""

    host: Summary | None
    call_host: Summary | None
    call_gpu: Summary | None
    call_eager: Summary | None
    host_forward: Summary | None = None  # under autograd: the forward alone (the rest is the backward's)
    call_host_forward: Summary | None = None
    queued: Summary | None = None  # on the queued clock: the GPU's time a call, the host's launches ahead of it
    call_queued: Summary | None = None


@dataclass(frozen=True)
class HostLead:
    """How far ahead of the GPU a program's host made a call (µs; 0 where the GPU waited for it), and launched its
    backward (in the profiled windows, where the profiler slows the host: the program's own lead is at least that);
    ``batch``: the lead at each call of a batch, read whole outside the windows (``host_pace.typical_batch``);
    ``forward_share``: the call's forward kernels' part of its forward and backward kernels."""

    forward: Summary | None
    backward: Summary | None = None
    batch: TypicalBatch | None = None
    forward_share: float | None = None


@dataclass(frozen=True)
class Measured:
    """An alternative measured outside the lab's session (FlexAttention, ``core/calls/flex_alternative.py``), with its
    samples' summaries on the lab's two clocks, so the same noise rule judges it; ``beside``: the call measured with
    it, where it was (packed attention)."""

    alternative: Alternative
    eager: Summary | None
    gpu: Summary | None
    beside: Beside | None = None

    def summary(self, clock: str) -> Summary | None:
        return self.gpu if clock == "gpu" else self.eager


@dataclass(frozen=True)
class Common:
    """What every advice of one lab measurement says the same way."""

    measured_as: str
    differences: tuple[str, ...]


def refused_backends(why_not: dict[str, str]) -> dict[str, str]:
    """The backends torch refuses for a call's own arguments (dropout on the CPU, a mask Flash cannot take...), with
    torch's reason: not those off by a flag or behind another in the order. Changing the order cannot make them run,
    so they are never advised, however fast the lab (which may differ from the call) measured them."""
    return {b: r for b, r in why_not.items() if not r.startswith((ELIGIBLE, FLAG_OFF))}


def advise(session: Session, current: str | None, priority: Sequence[str] = (),
           differences: Iterable[str] = (), rewrites: Iterable[Rewrite] = (),
           refused: dict[str, str] | None = None, outside: Iterable[Measured] = (),
           codes: dict[str, str] | None = None, host_lead: HostLead | None = None) -> SignatureAdvice:
    """The advice for a call that ran ``current``, from the lab's measurement of its workload (and of each
    rewrite's); ``refused``: backends torch refuses for the call itself (:func:`refused_backends`); ``outside``:
    alternatives measured apart from the lab's session (FlexAttention); ``codes``: each backend's code as it was run
    against the call (``core/calls/call_code.backend_code``): a backend without one is listed with no code and never
    advised (its code gave another output, or raised); where None, each gets the priority line alone; ``host_lead``:
    how far ahead of the GPU the program's host launched the call (:func:`host_room`)."""
    refused = refused or {}
    outside = list(outside)
    rows, clock = _lab_rows(session)
    backends = tuple(
        Alternative("backend", b.value, _value(r.kernel_us), _value(r.gpu_us), _value(r.eager_us), r.max_abs_error,
                    r.peak_mib, priority_code(b, priority) if codes is None else codes.get(b.value, ""))
        for b, r in rows.items())
    changed = [found for found in map(_rewritten, rewrites) if found is not None]
    alternatives = backends + tuple(a for a, _ in changed) + tuple(m.alternative for m in outside)
    common = Common(session.workload.describe(), tuple(differences))
    if not rows:
        return SignatureAdvice(alternatives, current, clock, None, note="no backend ran in the lab", measured_as=common.measured_as, differences=common.differences)
    now = next((r for b, r in rows.items() if b.value == current), None)
    if now is None:
        return SignatureAdvice(alternatives, current, clock, None,
                               note=f"{current or 'its backend'} did not run in the lab at this shape", measured_as=common.measured_as, differences=common.differences)
    ours = _summary(now, clock)
    candidates = [(a, _summary(rows[Backend(a.backend)], clock), ours, clock) for a in backends
                  if a.backend != current and a.backend not in refused and a.code]
    candidates += [(a, _summary(r, clock), ours, clock) for a, r in changed if a.exact]
    judged = [_outside_candidate(m, now, clock, host_lead) for m in outside]
    alternatives = backends + tuple(a for a, _ in changed) + tuple(j[0] for j in judged)  # each saying its clock
    candidates += [j for j, m in zip(judged, outside) if m.alternative.exact]
    # the largest saving first: on one clock, the fastest; an alternative with no GPU/call is held against the
    # call's backend on the eager clock
    winners = sorted((theirs.median - s.median, -s.median, -i) for i, (_, s, theirs, _) in enumerate(candidates)
                     if s and theirs and beats(s, theirs))
    current_us = ours.median if ours else None
    if not winners:
        faster = [b for b, r in rows.items() if b.value in refused and ours and (s := _summary(r, clock))
                  and beats(s, ours)]
        note = "nothing measured here is faster beyond noise" + "".join(
            f"; {b.label} was faster in the lab, but torch refuses it for this call: {refused[b.value]}"
            for b in faster)
        return SignatureAdvice(alternatives, current, clock, current_us, note=note, measured_as=common.measured_as, differences=common.differences)
    index = -winners[-1][2]
    best, best_summary, theirs, best_clock = candidates[index]
    assert best_summary is not None and theirs is not None  # a winner has both
    return SignatureAdvice(alternatives, current, best_clock, theirs.median, best, best_summary.median,
                           measured_as=common.measured_as, differences=common.differences)


def _outside_candidate(m: Measured, now: BackendRow, clock: str, host_lead: HostLead | None = None,
                       ) -> tuple[Alternative, Summary | None, Summary | None, str]:
    """An alternative measured apart, with the call's summary on the clock they are compared on. Measured beside the
    call, with the program's host lead known: :func:`host_room` decides the clock, against the call as measured
    beside it. Otherwise the eager one where it has no GPU/call (a CUDA graph could not capture its code), and where
    it has both, the clock on which it saves less (:func:`leaving_sdpa`), against the call beside it where it was
    timed so (its inputs laid out as the call's: 1,944 µs a training call on an H100 where the lab's contiguous
    inputs read 1,766)."""
    if clock == "gpu" and m.beside is not None and host_lead is not None:
        decided = host_room(m, host_lead)
        if decided is not None:
            ours, theirs, chosen, why = decided
            return replace(m.alternative, judged=why), ours, theirs, chosen
    if clock == "gpu":
        b = m.beside
        if b is not None and b.call_gpu and b.call_eager:  # the call as timed beside the code, not the lab's
            return m.alternative, *leaving_sdpa(m.gpu, m.eager, b.call_gpu, b.call_eager)
        return m.alternative, *leaving_sdpa(m.gpu, m.eager, now.gpu_us, now.eager_us)
    return m.alternative, m.summary(clock), _summary(now, clock), clock


def host_room(m: Measured, lead: HostLead) -> tuple[Summary, Summary, str, str] | None:
    """The clock code that leaves SDPA is held against the call on in this program: (its, the call's, clock, why), or
    None where a clock or a lead is missing. Torch's ``varlen_attn`` is a Python op and the packing is Python too: a
    training call's code cost the host 1.9 ms against SDPA's 0.7 on an H100, for 0.9 ms of GPU against 1.8
    (``docs/lab-notes/packed-attention.md``).

    Where a batch's calls were read whole (and, for a training call, their backwards), the code's GPU time is held
    against the call's beside it with the time the GPU would wait for the host added (``host_pace``: the batch
    replayed on its leads): the "paced" clock. The GPU times are read on the queued clock where both were (eager
    launches' gaps kept), else on GPU/call. Otherwise, from the leads' medians alone: where, in each phase, the
    host ran ahead of the GPU by more than the code adds to it over one batch's calls, GPU/call; where it did not, the
    host clock (conservative: such leads were read right after a window's wait)."""
    b, a = m.beside, m.alternative
    if b is None or not (m.gpu and b.call_gpu and b.host and b.call_host):
        return None
    n = a.calls_per_batch
    training = bool(b.host_forward and b.call_host_forward)
    if training:
        forward = b.host_forward.median - b.call_host_forward.median  # type: ignore[union-attr]
        phases = [("forward", forward, lead.forward),
                  ("backward", b.host.median - b.call_host.median - forward, lead.backward)]
    else:
        phases = [("forward", b.host.median - b.call_host.median, lead.forward)]
    facts = (f"on GPU/call {us_number(m.gpu.median)} µs against the call's {us_number(b.call_gpu.median)} beside "
             f"it; on the host {us_number(b.host.median)} µs against {us_number(b.call_host.median)}")
    batch = lead.batch
    if batch is not None and (batch.backward or not training):
        queued = (b.queued, b.call_queued) if b.queued and b.call_queued else None
        if queued:
            facts += (f"; queued behind the host's launches {us_number(queued[0].median)} µs against "
                      f"{us_number(queued[1].median)}")
        return _paced(queued or (m.gpu, b.call_gpu), "its queued time" if queued else "GPU/call", batch,
                      [added for _, added, _ in phases], lead.forward_share, facts)
    if any(added > 0 and ahead is None for _, added, ahead in phases):
        return None  # a phase the code slows on the host whose lead was not read
    said = "; ".join(f"{name}: the host {us_number(ahead.median)} µs ahead of the GPU, the code "
                     f"{us_number(max(0.0, added) * n)} µs more host time over the {n} call(s) on one mask"
                     for name, added, ahead in phases if ahead is not None)
    facts += (f" ({said}; medians: the forward's read outside the profiler, the backward's in its windows, where it "
              "slows the host)")
    if all(added <= 0 or ahead.median > added * n for _, added, ahead in phases if ahead is not None):
        return m.gpu, b.call_gpu, "gpu", f"{facts}: the host's lead covers what the code adds, held to GPU/call"
    return b.host, b.call_host, "host", (f"{facts}: the host's lead does not cover what the code adds, held to the "
                                         "host clock")


FORWARD_SHARE = 1 / 3
"""The forward's part of a training call's GPU time where its kernels were not read (a backward costs about two
forwards)."""


def _paced(gpu: tuple[Summary, Summary], on: str, batch: TypicalBatch, added: list[float], share: float | None,
           facts: str) -> tuple[Summary, Summary, str, str]:
    """The code on the paced clock: its GPU time a call (``gpu``: the code's and the call's, on the clock ``on`` names:
    queued behind the host's launches where that was read, else GPU/call) plus the GPU's wait for the host a call
    (``host_pace``)."""
    g, call_gpu = gpu
    saved = call_gpu.median - g.median
    added = [max(0.0, x) for x in added]  # a phase read as cheaper on the host is not counted on: as said below
    if len(added) == 2:
        part = FORWARD_SHARE if share is None else share
        forward, backward = PhaseChange(added[0], saved * part), PhaseChange(added[1], saved * (1 - part))
    else:
        forward, backward = PhaseChange(added[0], saved), None
    n = len(batch.forward)
    wait = gpu_wait_us(batch, forward, backward) / n
    paced = Summary(g.median + wait, g.p90 + wait, g.count, None if g.p10 is None else g.p10 + wait)

    def span(leads: tuple[float, ...]) -> str:
        return f"{us_number(min(leads))} to {us_number(max(leads))} µs"
    ahead = f"the forward's {span(batch.forward)}" + (f", the backward's {span(batch.backward)}"
                                                     if backward is not None else "")
    why = (f"{facts}; the host ahead of the GPU by {ahead} over the {n} calls of a batch (medians of "
           f"{batch.batches} batch(es) read whole, outside the profiler); the code adds "
           + ", ".join(f"{us_number(x * n)} µs of host to the {name}"
                       for x, name in zip(added, ("forward", "backward")))
           + f": replayed on those leads the GPU waits {us_number(wait * n)} µs a batch, {us_number(wait)} a call, "
           f"held to {on} with that wait (paced)")
    return paced, call_gpu, "paced", why


def leaving_sdpa(gpu: Summary | None, eager: Summary | None, now_gpu: Summary | None,
                 now_eager: Summary | None) -> tuple[Summary | None, Summary | None, str]:
    """The clock code that leaves SDPA is held against the call on, from a GPU's lab (its summaries and the call's):
    (its, the call's, "gpu" or "eager"). The eager one where it has no GPU/call; where it has both, the one on which
    it saves less, and the eager one where it is not faster there beyond noise."""
    if gpu and eager and now_gpu and now_eager:
        if not beats(eager, now_eager):
            return eager, now_eager, "eager"  # slower where the host is timed: not offered
        if now_eager.median - eager.median < now_gpu.median - gpu.median:  # the smaller saving is the one promised
            return eager, now_eager, "eager"
        return gpu, now_gpu, "gpu"
    if gpu is None:
        return eager, now_eager, "eager"
    return gpu, now_gpu, "gpu"


def undecided_backends(session: Session, current: str | None, refused: dict[str, str] | None = None) -> list[str]:
    """The lab's backends that more samples could still advise for a call that ran ``current``
    (:func:`.faster.undecided` on the clock :func:`advise` compares): the lab measures on while there are any."""
    rows, clock = _lab_rows(session)
    now = next((r for b, r in rows.items() if b.value == current), None)
    ours = _summary(now, clock) if now is not None else None
    if ours is None:
        return []
    return [b.value for b, r in rows.items() if b.value != current and b.value not in (refused or {})
            and (s := _summary(r, clock)) is not None and undecided(s, ours)]


def _lab_rows(session: Session) -> tuple[dict[Backend, BackendRow], str]:
    """The backends that ran in the lab, and the clock advice compares them on (GPU/call where there is one)."""
    rows = {r.backend: r for r in session.rows() if r.status == Status.OK}
    return rows, "gpu" if any(r.gpu_us for r in rows.values()) else "eager"


def compiled_advice(advice: SignatureAdvice, eager_backend: str | None) -> SignatureAdvice:
    """A call inside a compiled graph: its alternatives are measured and listed, but no change is advised (what the
    graph would run after a change is not measured here). Where eager SDPA picks another backend for the same
    arguments than the graph runs (pytorch#177712: under Dynamo a ``None`` mask became a tensor, Flash became
    Mem-efficient), the note gives the measured cost of that difference per call."""
    def lab_us(backend: str | None) -> float | None:
        found = next((a for a in advice.alternatives if a.variant == "backend" and a.backend == backend), None)
        return None if found is None else found.gpu_us if advice.clock == "gpu" else found.eager_us

    note = "compiled: measured, not advised (a change inside a compiled graph is not measured here)"
    if eager_backend and advice.current and eager_backend != advice.current:
        ran, eager = lab_us(advice.current), lab_us(eager_backend)
        note += f"; the graph runs {advice.current}, eager SDPA picks {eager_backend} for the same arguments"
        if ran is not None and eager is not None:
            note += f": {us_number(ran)} against {us_number(eager)} µs, {ran - eager:+.1f} µs a call"
    return replace(advice, best=None, best_us=None, note=note)


def _summary(row: BackendRow, clock: str) -> Summary | None:
    return row.gpu_us if clock == "gpu" else row.eager_us


@dataclass
class RunAdvice:
    """The run's summary: SDPA's time on the clocks compared, and what the top changes would save."""

    sdpa_us: float = 0.0
    saving_us: float = 0.0
    top: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"sdpa_us": self.sdpa_us, "saving_us": self.saving_us, "top": list(self.top)}


def run_advice(items: Iterable[tuple[str, int, SignatureAdvice]]) -> RunAdvice:
    """``items``: (the signature in words, its count, its advice). The savings ranked, the top ``TOP`` named."""
    out = RunAdvice()
    savings: list[dict[str, Any]] = []
    for what, count, advice in items:
        if advice.current_us is not None:
            out.sdpa_us += advice.current_us * count
        saving = advice.saving_us_per_call
        if saving is not None and advice.best is not None:
            savings.append({"signature": what, "count": count, "from": advice.current, "to": advice.best.backend,
                            "variant": advice.best.variant,
                            "saving_us_per_call": saving, "saving_us": saving * count, "code": advice.best.code,
                            "per_batch_us": advice.best.per_batch_us, "calls_per_batch": advice.best.calls_per_batch})
    savings.sort(key=lambda s: -s["saving_us"])
    out.saving_us = sum(s["saving_us"] for s in savings)
    out.top = savings[:TOP]
    return out


@dataclass(frozen=True)
class AdviceProgress:
    """Where the alternatives' measuring stands: ``signature`` (from 1) of ``signatures``, what is measured there,
    and what is left of its time budget."""

    signature: int
    signatures: int
    what: str
    left_s: float

    @property
    def step(self) -> tuple[int, str]:
        return self.signature, self.what

    def line(self) -> str:
        """``measuring alternatives 2/3, 11 s left: SDPA backends at [2, 4, 16, 8] fp32 padding``: the numbers first,
        so a terminal line cut to its width keeps them."""
        return f"measuring alternatives {self.signature}/{self.signatures}, {max(0.0, self.left_s):.0f} s left: {self.what}"
