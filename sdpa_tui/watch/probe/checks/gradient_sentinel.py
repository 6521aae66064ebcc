"""The backward sentinel: what SDPA's backward produced for a watched program's own sampled calls.

A sampled call that records autograd (its first ``SAMPLE_FIRST``, then every ``SAMPLE_EVERY``-th) runs on views of its q, k, v
made by :class:`_Tap`, an identity autograd function whose backward receives exactly the ``dq``, ``dk``, ``dv``
that SDPA's backward produced and hands them on unchanged; a hook on the call's output receives the gradient
arriving from upstream (``grad_out``). The program's values and gradients are untouched (the views share
storage and strides, so SDPA picks the same backend; the tap returns the gradients it was given).

At each sampled backward the sentinel counts, on the device, the non-finite elements of ``dq``, ``dk``, ``dv``,
``grad_out`` and the inputs; on a GPU the counts are copied to pinned memory behind an event and read by the
probe's background thread when the event has passed: no sync per call. A NaN is blamed where it began: the
inputs, then the upstream gradient, else the backend's backward. At the first sample and then as the forward
check samples (``output_check.due``), the gradients are also compared with float64 math on the same tensors
(``gradient_reference.py``; that sample waits for the GPU, as the forward check does). One due while a profiler
window records is compared once the window has stopped (``held_checks.py``).

A sample whose backward is flagged keeps its tensors (by reference, at most ``KEEP_BYTES``) until it is read,
and the first flagged sample of a signature is saved as a repro folder (``repro.py``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import torch

from ....core.calls.gradient_check import GRADIENTS, TOLERANCE, GradientCheck
from . import gradient_reference, output_check
from .held_checks import HeldChecks

SAMPLE_FIRST = 32
"""A signature's first calls are all sampled: one training step's layers share a signature, and the backward runs
them in reverse, so the first non-finite gradient is made by the last layer's call; a NaN there reaches every
earlier layer as its upstream gradient (a Llama on padded batches on an H100: only its first call sampled, watch
saw "upstream", not the backend that began it)."""
SAMPLE_EVERY = 64  # then every 64th: a power of two; the probe's slow path takes these calls (TIME_EVERY)
KEEP_BYTES = 512 << 20
"""A sample read later keeps its tensors alive until then (they would be freed after the backward): at most this
much a signature at a time, else a flagged backward is said without a repro and the next sample waits for the
GPU. Each sample first reads the earlier ones the GPU has finished, so little is held."""


def due(count: int) -> bool:
    return count <= SAMPLE_FIRST or not count & (SAMPLE_EVERY - 1)


@dataclass
class CallTensors:
    """What a sampled call was given and its backward produced: the repro's tensors."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    mask: torch.Tensor | None
    dropout_p: float
    causal: bool
    scale: float | None
    gqa: bool
    grad_out: torch.Tensor | None = None
    grads: tuple = ()  # dq, dk, dv as the backward made them (None where not needed)

    def nbytes(self) -> int:
        tensors = (self.q, self.k, self.v, self.mask, self.grad_out, *self.grads)
        return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


@dataclass
class _Pending:
    """A sample's device-side counts, waiting for the GPU: dq, dk, dv, grad_out, q, k, v."""

    counts: torch.Tensor  # on the host (pinned) once ``event`` has passed
    event: object | None
    tensors: CallTensors | None


@dataclass
class SignatureGradients:
    """One signature's sentinel state; ``check`` is the record the probe sends (``OutputCheck.backward``)."""

    check: GradientCheck = field(default_factory=GradientCheck)
    pending: list[_Pending] = field(default_factory=list)
    sync_next: bool = False  # a flagged sample was too large to keep: the next is read at once and saved
    compare_owed: bool = False  # a held comparison's tensors changed before it ran: the next sample compares
    saved: bool = False
    owner: object = None  # the probe's entry of the signature


class _Tap(torch.autograd.Function):
    """Identity on q, k, v; its backward sees SDPA's dq, dk, dv and returns them as they are."""

    @staticmethod
    def forward(ctx, sample, q, k, v):
        ctx.sample = sample
        ctx.set_materialize_grads(False)
        return q.view_as(q), k.view_as(k), v.view_as(v)

    @staticmethod
    def backward(ctx, dq, dk, dv):
        sample = ctx.sample
        ctx.sample = None  # a second backward through the call (retain_graph) is not sampled again
        if sample is not None:
            try:
                sample.backward_done(dq, dk, dv)
            except Exception as exc:  # noqa: BLE001 - the sentinel never breaks the program's backward
                sample.sentinel.failed(sample.state, exc)
        return None, dq, dk, dv


class _Sample:
    __slots__ = ("sentinel", "state", "tensors", "compare")

    def __init__(self, sentinel: "GradientSentinel", state: SignatureGradients, tensors: CallTensors,
                 compare: bool) -> None:
        self.sentinel, self.state, self.tensors, self.compare = sentinel, state, tensors, compare

    def grad_out_arrived(self, grad: torch.Tensor) -> None:
        self.tensors.grad_out = grad  # returns None: the gradient goes on unchanged

    def backward_done(self, dq, dk, dv) -> None:
        self.tensors.grads = (dq, dk, dv)
        self.sentinel.sampled(self.state, self.tensors, self.compare)


def _tensors(t: CallTensors) -> tuple:
    return (t.q, t.k, t.v, t.mask, t.grad_out, *t.grads)


def nonfinite_counts(t: "CallTensors") -> torch.Tensor:
    """dq, dk, dv, grad_out, q, k, v: how many elements of each are NaN or Inf (a gradient not computed: 0), as one
    int64 tensor on the call's device, computed there. ``x - x`` is exactly 0 for a finite x and NaN for NaN and ±Inf,
    so each count is two elementwise kernels and a sum (``isfinite`` and its negation are five: on a GPU each kind of
    kernel new to the process is loaded at its first use, on the program's backward)."""
    zero = None
    counts = []
    for x in (*t.grads, t.grad_out, t.q, t.k, t.v):
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            counts.append((x - x).ne(0).sum())
        else:
            zero = t.q.new_zeros((), dtype=torch.int64) if zero is None else zero
            counts.append(zero)
    return torch.stack(counts)


class GradientSentinel:
    """Every signature's sampled backwards in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.version = 0  # bumped when a check changes: the probe sends its state again
        self.on_flagged = None  # (state, tensors) -> repro folder path or ""; set by the probe
        self.held: HeldChecks | None = None  # the probe's: a comparison due while a window records waits for its stop

    # -- on the calling thread, at a sampled forward -------------------------------------------
    def wrap(self, state: SignatureGradients, count: int, q, k, v, mask, dropout_p, causal, scale, gqa):
        """The views to call SDPA with and the function to give its output to, or None when not sampled."""
        compare = (count == 1 or not count & (output_check.CHECK_EVERY - 1) or state.compare_owed) \
            and not dropout_p and state.check.compared < output_check.MAX_CHECKS
        if not (due(count) or compare) or not (q.requires_grad or k.requires_grad or v.requires_grad):
            return None
        if q.is_cuda and torch.cuda.is_current_stream_capturing():  # the counts would be copied at replay
            return None
        state.compare_owed = False
        tensors = CallTensors(q.detach(), k.detach(), v.detach(), None if mask is None else mask.detach(),
                              float(dropout_p), bool(causal), scale, bool(gqa))
        sample = _Sample(self, state, tensors, compare)
        q2, k2, v2 = _Tap.apply(sample, q, k, v)

        def watch_output(out):
            if isinstance(out, torch.Tensor) and out.requires_grad:
                out.register_hook(sample.grad_out_arrived)
            return out

        return q2, k2, v2, watch_output

    # -- in the backward (autograd's thread for the device) -----------------------------------
    def sampled(self, state: SignatureGradients, t: CallTensors, compare: bool) -> None:
        counts = nonfinite_counts(t)
        with self._lock:
            c = state.check
            for g, x in zip(GRADIENTS, t.grads):
                if isinstance(x, torch.Tensor):
                    c.elements.setdefault(g, x.numel())
        if compare and self.held is not None and self.held.hold(
                lambda: self._read_and_compare(state, counts, t), _tensors(t), lambda: self._owe(state)):
            return  # a window is recording: compared once it has stopped
        immediate = compare or state.sync_next or not t.q.is_cuda
        if immediate:
            if self._read(state, counts.tolist(), t) and compare:
                self._compare(state, t)
            return
        self.poll([state])  # earlier samples the GPU has finished: their kept tensors are let go
        held = sum(p.tensors.nbytes() for p in state.pending if p.tensors is not None)
        keep = t if not state.saved and held + t.nbytes() <= KEEP_BYTES else None
        host = torch.empty(counts.shape, dtype=counts.dtype, pin_memory=True)
        host.copy_(counts, non_blocking=True)
        event = torch.cuda.Event()
        event.record()
        with self._lock:
            state.pending.append(_Pending(host, event, keep))

    def _read_and_compare(self, state: SignatureGradients, counts: torch.Tensor, t: CallTensors) -> None:
        try:
            if self._read(state, counts.tolist(), t):
                self._compare(state, t)
        except Exception as exc:  # noqa: BLE001 - as in the backward: said in the check
            self.failed(state, exc)

    def _owe(self, state: SignatureGradients) -> None:
        """A held comparison's tensors changed before it could run: the signature's next sample compares."""
        state.compare_owed = True

    def _compare(self, state: SignatureGradients, t: CallTensors) -> None:
        c = state.check
        error = gradient_reference.relative_errors(t)
        with self._lock:
            if isinstance(error, str):
                c.note = c.note or error
            else:
                c.compared += 1
                c.tolerance = TOLERANCE.get(str(t.q.dtype), 5e-2)
                for g, e in error.items():
                    c.max_rel_error[g] = max(c.max_rel_error.get(g, 0.0), e)
            self.version += 1
        if c.out_of_tolerance:
            self._flagged(state, t)

    # -- reading the counts ---------------------------------------------------------------------
    def _read(self, state: SignatureGradients, counts: list[int], t: CallTensors | None) -> bool:
        """Count one sample (:func:`nonfinite_counts`); whether everything in it was finite."""
        dq, dk, dv, grad_out, *each_input = (int(x) for x in counts)
        inputs = sum(each_input)
        with self._lock:
            c = state.check
            c.samples += 1
            if inputs:
                c.inputs_nonfinite += 1
            elif grad_out:
                c.upstream_nonfinite += 1
            elif dq or dk or dv:
                for g, n in zip(GRADIENTS, (dq, dk, dv)):
                    if n:
                        if not c.nonfinite.get(g):
                            c.first_bad[g] = n
                        c.nonfinite[g] = c.nonfinite.get(g, 0) + 1
                state.sync_next = t is None and not state.saved
            self.version += 1
            flagged = bool(dq or dk or dv) and not (inputs or grad_out)
        if flagged and t is not None:
            self._flagged(state, t)
        return not any(counts)

    def _flagged(self, state: SignatureGradients, t: CallTensors) -> None:
        if state.saved or self.on_flagged is None:
            return
        state.saved, state.sync_next = True, False
        path = self.on_flagged(state, t)
        with self._lock:
            state.check.repro = path or state.check.repro
            self.version += 1

    def poll(self, entries, wait: bool = False) -> None:
        """Read the samples whose counts have reached the host (all of them, waiting, with ``wait``)."""
        for state in entries:
            while state.pending:
                pending = state.pending[0]
                event = pending.event
                if event is not None and not event.query():
                    if not wait:
                        break
                    event.synchronize()
                with self._lock:
                    state.pending.pop(0)
                self._read(state, pending.counts.tolist(), pending.tensors)

    def failed(self, state: SignatureGradients, exc: BaseException) -> None:
        with self._lock:
            first = (str(exc).strip().splitlines() or [""])[0][:120]
            state.check.note = state.check.note or f"not checked: {type(exc).__name__}: {first}"
            self.version += 1
