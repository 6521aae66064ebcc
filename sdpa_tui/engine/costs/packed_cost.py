"""Packed attention measured on a padded call's own lengths (a child process with torch), after its code was run and
its output found equal to the call's on the real rows.

``python -m sdpa_tui.engine.costs.packed_cost`` reads ``{"specs": [PackedSpec, ...]}`` as JSON on stdin and writes one
JSON line per spec on stdout, in order: for each of its codes (``varlen_attn``'s, nested jagged SDPA's) by name,
``{"cost": PackedCost}`` or ``{"error": "..."}`` (the API missing from this torch, a code that raised, an output that
differs from the call's). The inputs are the lab's (``calls.Inputs``: the call's shapes and dtype) with the spec's
lengths, Q, K and V laid out in memory as the call's were (a gather from a transposed tensor is a view, from a
contiguous one a copy first), and the call's mask as it passed it (boolean, or float with 0 kept and the dtype's
lowest masked, as transformers builds it; [batch, 1, 1, keys] for key padding, [batch, 1, rows, keys] with the causal
triangle).
Each code, the text the advice shows, runs as it is with ``q, k, v`` and ``attn_mask`` in scope: its imports and its
once-per-batch part once, its every-call part (the packing, the call, the unpacking) in every call and every timed
sample; the once-per-batch part is timed apart (host time, its waits for the GPU included, and its kernels). Its
``out`` (and under autograd its dq, dk, dv) is held against
``F.scaled_dot_product_attention`` called as the call was, on the real rows only (the padded rows' outputs are
thrown away by the program: the code writes zeros there), within the dtype's tolerance (``OUTPUT_TOLERANCE``); the
error is against float64 MATH on the same rows. Clocks as the lab's (``code_clocks.timed``): the every-call part
waits for nothing, so a CUDA graph can capture it (where it cannot, the note says why and the advice compares on the
eager clock). The first call's time is reported apart (``compile_s``), never in a sample.
"""

from __future__ import annotations

import importlib
import json
import statistics
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from ...core.calls.mask_forms import CAUSAL_KEY_PADDING
from ...core.calls.packed_alternative import NEEDS_CUDA, VARLEN, CallClocks, PackedCost, PackedSpec, code_parts
from ..measuring import cpu_threads
from ..measuring.clocks import eager_us, host_us, queued_us
from ..measuring.cpu_allocator import settle_allocator
from ..measuring.environment import make_current
from ..measuring.quality import compare, reference_output
from ..measuring.sdpa_call import Inputs, kept_keys
from .call_match import DiffersFromTheCall, matched
from .code_clocks import SAMPLES, answer_line, timed
from .compiled_cost import profiled_kernel_us


def missing(name: str, device: torch.device) -> str | None:
    """Why this torch cannot run the code ``name`` on ``device`` at all, or None."""
    if name != VARLEN:
        return None
    try:
        importlib.import_module("torch.nn.attention.varlen")  # torch 2.10+
    except ImportError:
        return f"this torch ({torch.__version__}) has no torch.nn.attention.varlen (torch 2.10 and later have it)"
    return None if device.type == "cuda" else NEEDS_CUDA


def passed_mask(spec: PackedSpec, keep: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The mask as the call passed it (its kind), and as booleans (for the float64 reference)."""
    rows = spec.workload.seq if spec.mask_form == CAUSAL_KEY_PADDING else 1
    kept = keep[:, None, None, :].expand(-1, 1, rows, -1)
    if spec.mask_form == CAUSAL_KEY_PADDING:
        kept = kept & torch.ones(rows, rows, dtype=torch.bool, device=keep.device).tril()
    if spec.mask == "float":
        return torch.zeros(kept.shape, dtype=dtype, device=keep.device).masked_fill(~kept, torch.finfo(dtype).min), kept
    return kept, kept


def _scope(code: str, names: dict[str, object]) -> dict[str, object]:
    """``names`` with torch, F and the code's imports."""
    scope = {"torch": torch, "F": F, **names}
    exec(compile(code_parts(code).imports, "<advice code>", "exec"), scope)  # noqa: S102 - the code offered, checked
    return scope


def laid_out(t: torch.Tensor, layout: str) -> torch.Tensor:
    """``t`` ([batch, heads, length, head dim], contiguous) with the same values laid out in memory as ``layout``
    says (``watched_calls.LAYOUTS``): "blhd" a transposed [batch, length, heads, head dim] tensor; a leaf as ``t``
    was, its gradient wanted as ``t``'s."""
    if layout != "blhd":
        return t
    return t.detach().transpose(1, 2).contiguous().transpose(1, 2).requires_grad_(t.requires_grad)


def run_code(code: str, names: dict[str, object]) -> Callable[[], torch.Tensor]:
    """The code run as written: its imports and its once-per-batch part now, its every-call part (pack, call, unpack)
    by each call of what this returns, which gives its ``out``."""
    parts = code_parts(code)
    batch = _scope(code, names)
    exec(compile(parts.per_batch, "<advice code>", "exec"), batch)  # noqa: S102
    body = compile(parts.per_call, "<advice code>", "exec")

    def out() -> torch.Tensor:
        # each call in a scope of its own: a name the call left behind (``packed``) would keep its autograd graph,
        # and with it the inputs' AccumulateGrad nodes made on the warm-up's stream, alive into a CUDA graph's
        # capture, which then failed ("operation failed due to a previous error during capture" on an H200; torch
        # warned of the streams' mismatch)
        scope = dict(batch)
        exec(body, scope)  # noqa: S102
        return scope["out"]

    return out


def run_batch_part(code: str, names: dict[str, object]) -> Callable[[], object]:
    """The code's once-per-batch part, run afresh by each call of what this returns (its imports done now)."""
    scope = _scope(code, names)
    body = compile(code_parts(code).per_batch, "<advice code>", "exec")
    return lambda: exec(body, dict(scope))  # noqa: S102


def batch_clocks(code: str, names: dict[str, object], device: torch.device) -> tuple[tuple[float, ...], float | None]:
    """The once-per-batch part's host time per run (samples, its waits for the GPU included) and, on a GPU, its
    kernels' time."""
    batch = run_batch_part(code, names)
    for _ in range(3):
        batch()
    samples = tuple(eager_us(batch, device, 1) for _ in range(SAMPLES))
    return samples, profiled_kernel_us(batch) if device.type == "cuda" else None


def same_gradients(out: Callable[[], torch.Tensor], inputs: Inputs, attn_mask: torch.Tensor, keep: torch.Tensor,
                   spec: PackedSpec) -> None:
    """The code's dq, dk, dv against the call's on the real tokens, with no gradient at the padded rows' outputs (the
    program throws them away); raises :class:`DiffersFromTheCall` naming the gradient that differs."""
    q, k, v = inputs.q, inputs.k, inputs.v
    grad = inputs.grad_out * keep[:, None, :, None]
    mine = torch.autograd.grad(out(), (q, k, v), grad)
    own = torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=spec.scale,
                                                             enable_gqa=spec.workload.gqa), (q, k, v), grad)
    for name, a, b in zip(("dq", "dk", "dv"), mine, own):
        try:
            matched(a.transpose(1, 2)[keep], b.transpose(1, 2)[keep], q.dtype)
        except DiffersFromTheCall as exc:
            raise DiffersFromTheCall(f"its {name} differs from the call's: {exc}") from None


def measure_code(spec: PackedSpec, code: str) -> PackedCost:
    device = torch.device(spec.device)
    make_current(device)
    inputs = Inputs.make(spec.workload, device)
    if spec.layouts:  # as the call's Q, K, V lay in memory: the gathers cost what they cost the program
        inputs.q, inputs.k, inputs.v = (laid_out(t, layout) for t, layout in zip((inputs.q, inputs.k, inputs.v),
                                                                                 spec.layouts))
        if inputs.grad_out is not None:  # the output's gradient comes back as the queries went in (transformers
            inputs.grad_out = laid_out(inputs.grad_out, spec.layouts[0])  # transposes both the same way)
    keep = kept_keys(spec.workload, device)
    attn_mask, kept = passed_mask(spec, keep, inputs.q.dtype)
    names = {"q": inputs.q, "k": inputs.k, "v": inputs.v, "attn_mask": attn_mask}
    out = run_code(code, names)
    step = out
    if spec.workload.backward:
        q, k, v, grad_out = inputs.q, inputs.k, inputs.v, inputs.grad_out

        def step() -> object:
            return torch.autograd.grad(out(), (q, k, v), grad_out)

    started = time.monotonic()
    step()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    first_s = time.monotonic() - started
    result = out().detach().transpose(1, 2)[keep]
    with torch.no_grad():
        own = F.scaled_dot_product_attention(inputs.q, inputs.k, inputs.v, attn_mask=attn_mask, scale=spec.scale,
                                             enable_gqa=spec.workload.gqa).transpose(1, 2)[keep]
    agreement = matched(result, own, inputs.q.dtype)
    if spec.workload.backward:
        same_gradients(out, inputs, attn_mask, keep, spec)
    reference = reference_output(inputs, attn_mask=kept, is_causal=False, scale=spec.scale).transpose(1, 2)[keep]
    error, _ = compare(result, reference)
    clocks = timed(step, device)
    batch_eager, batch_kernel = batch_clocks(code, names, device)
    host = host_samples(step, device)
    return PackedCost(clocks.eager, clocks.gpu, clocks.kernel_us, error, clocks.peak_mib, first_s, clocks.note,
                      agreement, batch_eager, batch_kernel, host,
                      host_samples(out, device) if spec.workload.backward else (),
                      call_clocks(inputs, attn_mask, spec, device), queued_samples(step, device, host))


def host_samples(step: Callable[[], object], device: torch.device) -> tuple[float, ...]:
    """``step`` on the host clock (``clocks.host_us``), the lab's number of samples."""
    return tuple(host_us(step, device) for _ in range(SAMPLES))


def queued_samples(step: Callable[[], object], device: torch.device, host: tuple[float, ...]) -> tuple[float, ...]:
    """``step`` on the queued clock (``clocks.queued_us``: the GPU's time a call with the host's launches ahead of
    it), the lab's number of samples; none on the CPU, or where the host could not be put ahead."""
    if device.type != "cuda" or not host:
        return ()
    samples = [queued_us(step, device, statistics.median(host)) for _ in range(SAMPLES)]
    return tuple(x for x in samples if x is not None)


def call_clocks(inputs: Inputs, attn_mask: torch.Tensor, spec: PackedSpec, device: torch.device) -> CallClocks:
    """SDPA called as the call was, on the code's own inputs (laid out as the call's, its mask as passed), on the same
    clocks in the same process: the baseline the code is held against (the lab's backends ran on contiguous inputs
    in another process)."""
    q, k, v = inputs.q, inputs.k, inputs.v

    def call() -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=spec.scale,
                                              enable_gqa=spec.workload.gqa)

    step: Callable[[], object] = call
    if spec.workload.backward:
        def step() -> object:
            return torch.autograd.grad(call(), (q, k, v), inputs.grad_out)
    for _ in range(3):
        step()
    clocks = timed(step, device)
    host = host_samples(step, device)
    return CallClocks(clocks.eager, clocks.gpu, host, host_samples(call, device) if spec.workload.backward else (),
                      queued_samples(step, device, host))


def measure_spec(spec: PackedSpec) -> dict[str, dict]:
    """Each of the spec's codes, by name: its cost or why it has none."""
    device = torch.device(spec.device)
    out = {}
    for name, code in spec.codes:
        why = missing(name, device)
        out[name] = {"error": why} if why else answer_line(lambda c: measure_code(spec, c), code,
                                                           (DiffersFromTheCall,))
    return out


def main() -> int:
    specs = [PackedSpec.from_dict(d) for d in json.loads(sys.stdin.read())["specs"]]
    cpu_threads.leave_a_core()  # the engine's rule on the CPU, so the code is timed as the backends were
    settle_allocator()  # and its allocator regime
    for spec in specs:
        try:
            answer = measure_spec(spec)
        except Exception as exc:  # noqa: BLE001 - a spec that cannot be rebuilt: each code says why
            why = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            answer = {name: {"error": why} for name, _ in spec.codes}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
