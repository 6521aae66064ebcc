"""FlexAttention measured at lab workloads (a child process with torch), on the lab's clocks.

``python -m sdpa_tui.engine.flex_cost`` reads ``{"specs": [FlexSpec, ...]}`` as JSON on stdin and writes one JSON
line per spec on stdout, in order: ``{"cost": FlexCost}``, or ``{"error": "..."}`` where that workload could not be
measured. The inputs are the lab's own (``calls.Inputs``: the same Q, K, V, mask and output gradient as the SDPA
backends were measured on); ``torch.compile(flex_attention, dynamic=False)`` runs with the block mask equal to the
workload's mask (causal: ``q_idx >= kv_idx``; padding: ``key_keep[b, kv_idx]``, read from the lab's [batch, kv_len]
mask, which pads the last eighth of the keys). Clocks, as the lab's:
eager (back-to-back calls host-timed, one synchronize) and, on a GPU, GPU/call (a CUDA graph of the calls replayed)
and the kernel time (torch.profiler's summed GPU activities per call). The error is against float64 MATH on the same
inputs, as every backend's. On the CPU it times with the engine's threads (``cpu_threads``). The first call's compile
time is reported apart, never in a sample.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

import torch
from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention

from ..core.flex_alternative import FlexCost, FlexSpec, refusal
from . import cpu_threads
from .call_memory import peak_extra_bytes
from .calls import Inputs
from .clocks import GraphClock, calls_for, eager_us
from .compiled_cost import profiled_kernel_us
from .environment import make_current
from .quality import compare, reference_output

SAMPLES = 15
"""Samples per clock: at least the advice's ``MIN_SAMPLES``, so the noise rule can judge FlexAttention."""
EAGER_TARGET_US = 2_000.0
"""One eager sample lasts about this long (at most 64 calls)."""
GRAPH_REPLAYS = 4


def block_mask(inputs: Inputs) -> BlockMask | None:
    """The block mask equal to the lab's mask (``calls.Inputs``), its ``mask_mod`` the one the advice's code has
    (``flex_alternative.MASK_MODS``): a key-padding mask is read from a [batch, kv_len] tensor, as a program's own
    mask would be. (A mask_mod that compared ``kv_idx`` with a constant ran 124 µs a call where the tensor read ran
    154, 167 in scripts/diag_flex.py, on an H100 at [8, 16, 1024, 64] bf16: the advice timed code it did not give.)"""
    w, device = inputs.workload, inputs.q.device
    if w.mask == "causal":
        return create_block_mask(lambda b, h, q_idx, kv_idx: q_idx >= kv_idx, None, None, w.seq, w.kv_seq,
                                 device=device)
    if w.mask == "padding" and inputs.mask is not None:
        key_keep = inputs.mask[:, 0, 0, :]  # [batch, kv_len]
        return create_block_mask(lambda b, h, q_idx, kv_idx: key_keep[b, kv_idx], w.batch, None, w.seq, w.kv_seq,
                                 device=device)
    return None


def _step(flex: Callable[..., torch.Tensor], inputs: Inputs, mask: BlockMask | None) -> Callable[[], object]:
    q, k, v, gqa = inputs.q, inputs.k, inputs.v, inputs.workload.gqa
    if not inputs.workload.backward:
        return lambda: flex(q, k, v, block_mask=mask, enable_gqa=gqa)
    grad_out = inputs.grad_out

    def forward_backward():
        out = flex(q, k, v, block_mask=mask, enable_gqa=gqa)
        return torch.autograd.grad(out, (q, k, v), grad_out)

    return forward_backward


def measure(spec: FlexSpec, flex: Callable[..., torch.Tensor]) -> FlexCost:
    device = torch.device(spec.device)
    make_current(device)
    inputs = Inputs.make(spec.workload, device)
    mask = block_mask(inputs)
    step = _step(flex, inputs, mask)
    started = time.monotonic()
    step()  # compiles
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    compile_s = time.monotonic() - started
    # in the grad mode of the timed calls: Dynamo guards on it, and another mode would compile again
    out = flex(inputs.q, inputs.k, inputs.v, block_mask=mask, enable_gqa=spec.workload.gqa).detach()
    error, _ = compare(out, reference_output(inputs))
    peak = peak_extra_bytes(step, device)
    per_call = eager_us(step, device, 3)
    calls = calls_for(EAGER_TARGET_US, per_call, 64)
    eager = tuple(eager_us(step, device, calls) for _ in range(SAMPLES))
    gpu: tuple[float, ...] = ()
    kernel, note = None, ""
    if device.type == "cuda":
        clock = GraphClock(step, device, per_call)
        if clock.method == "graph":
            gpu = tuple(clock.sample(GRAPH_REPLAYS) for _ in range(SAMPLES))
        else:
            note = f"no GPU/call: the CUDA graph could not be captured ({clock.capture_error})"
        clock.release()
        kernel = profiled_kernel_us(step)
    return FlexCost(eager, gpu, kernel, error, None if peak is None else peak / 2**20, compile_s, note)


def main() -> int:
    specs = [FlexSpec.from_dict(d) for d in json.loads(sys.stdin.read())["specs"]]
    cpu_threads.leave_a_core()  # the engine's rule on the CPU, so FlexAttention is timed as the backends were
    # each workload compiled for its own sizes: after a second shape, Dynamo's automatic dynamic shapes made kernels
    # for any size, slower (scripts/diag_flex.py on an H100: 372 µs a call against 306 at [4, 16, 2048, 128] bf16)
    flex = torch.compile(flex_attention, dynamic=False)
    for spec in specs:
        why = refusal(spec.workload, spec.device)
        try:
            answer = {"error": why} if why else {"cost": measure(spec, flex).to_dict()}
        except Exception as exc:  # noqa: BLE001 - one workload's failure is its answer; the next is measured
            answer = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
