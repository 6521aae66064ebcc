"""A compiled SDPA call measured alone, beside the eager call it is held against (a child process with torch).

``python -m sdpa_tui.engine.costs.compiled_cost`` reads a :class:`~..core.compiled_twins.CostSpec` as JSON on stdin and
writes a :class:`~..core.compiled_twins.CompiledCost` as JSON on stdout. The call is rebuilt from its signature:
random q, k, v; the mask as the graph had it (its shape and strides: an expanded mask keeps its stride 0), all
keys kept; then ``torch.compile`` of one SDPA call with those arguments (Inductor, as the graph), and the eager
call as the twin makes it (its own mask, ``None`` for none). Clock: on a GPU, the GPU's own work per call (the
summed durations of the kernels, memsets and copies torch.profiler records over a few calls, as watch's kernel
time); on the CPU, the host's time per call (median of repeats), with the engine's threads (``cpu_threads``).
Forward, and forward+backward where autograd recorded the call. The compiled call alone is not the graph: the graph may fuse its neighbours into it.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from ...core.calls.compiled_twins import CompiledCost, CostSpec
from ..measuring import cpu_threads
from ..measuring.cpu_allocator import settle_allocator
from ..measuring.environment import make_current

CALLS = 5
REPEATS = 7


def _mask(kind: str, shape: list[int] | None, strides: list[int] | None, device: str) -> torch.Tensor | None:
    if kind == "none" or not shape:
        return None
    dtype = torch.bool if kind == "bool" else torch.float32
    if strides is None:
        return torch.ones(shape, dtype=dtype, device=device) if kind == "bool" else torch.zeros(shape, device=device)
    base = torch.empty_strided(shape, strides, dtype=dtype, device=device)
    return base.fill_(True) if kind == "bool" else base.zero_()


def _inputs(spec: CostSpec) -> tuple[torch.Tensor, ...]:
    dtype = getattr(torch, spec.dtype.removeprefix("torch."))
    q = torch.randn(spec.q_shape, dtype=dtype, device=spec.device, requires_grad=spec.grad)
    k, v = (torch.randn(spec.kv_shape, dtype=dtype, device=spec.device, requires_grad=spec.grad) for _ in range(2))
    return q, k, v


def profiled_kernel_us(once: Callable[[], object], calls: int = CALLS) -> float:
    """The GPU's own work per call: the summed durations of the kernels, memsets and copies torch.profiler records
    over ``calls`` calls (watch's kernel time), after the caller's warm-up."""
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            once()
        torch.cuda.synchronize()
    return sum(e.device_time for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA) / calls


def _per_call_us(fn, backward: bool, grad: torch.Tensor, cuda: bool) -> float:
    def once():
        out = fn()
        if backward:
            out.backward(grad)
    for _ in range(3):
        once()
    if cuda:
        return profiled_kernel_us(once)
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(CALLS):
            once()
        times.append((time.perf_counter() - start) * 1e6 / CALLS)
    return statistics.median(times)


def measure(spec: CostSpec) -> CompiledCost:
    cuda = spec.device.startswith("cuda")
    make_current(torch.device(spec.device))
    if not cuda:  # the engine's rule on the CPU: with every core's thread, a busy 2-core VM read the compiled
        cpu_threads.leave_a_core()  # forward anywhere from 0.5 to 60 ms a call (test_compiled_twins)
    q, k, v = _inputs(spec)
    grad = torch.randn_like(q)
    graph_mask = _mask(spec.mask, spec.mask_shape, spec.mask_strides, spec.device)
    eager_mask = _mask(spec.eager_mask, spec.eager_mask_shape, None, spec.device)
    options = dict(dropout_p=spec.dropout_p, is_causal=spec.causal, scale=spec.scale, enable_gqa=spec.gqa)

    def attend(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **options)

    compiled = torch.compile(attend)
    started = time.monotonic()
    compiled(q, k, v, graph_mask)
    compile_s = time.monotonic() - started
    out = CompiledCost(clock="kernels" if cuda else "host", compile_s=compile_s, against_twin=spec.against_twin,
                       compiled_us=_per_call_us(lambda: compiled(q, k, v, graph_mask), False, grad, cuda),
                       eager_us=_per_call_us(lambda: attend(q, k, v, eager_mask), False, grad, cuda))
    if spec.grad:
        out.compiled_fwd_bwd_us = _per_call_us(lambda: compiled(q, k, v, graph_mask), True, grad, cuda)
        out.eager_fwd_bwd_us = _per_call_us(lambda: attend(q, k, v, eager_mask), True, grad, cuda)
    return out


def main() -> int:
    settle_allocator()  # the engine's regime, so the graph is timed as the backends were
    spec = CostSpec.from_dict(json.loads(sys.stdin.read()))
    sys.stdout.write(json.dumps(measure(spec).to_dict()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
