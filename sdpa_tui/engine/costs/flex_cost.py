"""FlexAttention measured at lab workloads (a child process with torch), on the lab's clocks, after its code was run
and its output found equal to the call's.

``python -m sdpa_tui.engine.costs.flex_cost`` reads ``{"specs": [FlexSpec, ...]}`` as JSON on stdin and writes one JSON
line per spec on stdout, in order: ``{"cost": FlexCost}``, or ``{"error": "..."}`` where that workload could not be
measured or the code's output differed from SDPA's. The inputs are the lab's own (``calls.Inputs``: the same Q, K, V
and output gradient as the SDPA backends were measured on) with a mask of the call's form (``core/calls/mask_forms``: key
padding read from the lab's [batch, kv_len] mask, which pads the last eighth of the keys; causal key padding, that
and the causal triangle). The spec's code, the text the advice shows, is executed as it is: its lines but the last
once (they compile FlexAttention and build the block mask), its last line, the call, once to compare its output with
``F.scaled_dot_product_attention`` called as the call was (the same inputs, its mask or ``is_causal``) within the
dtype's tolerance (``OUTPUT_TOLERANCE``), then in every timed sample. Clocks, as the lab's:
eager (back-to-back calls host-timed, one synchronize) and, on a GPU, GPU/call (a CUDA graph of the calls replayed)
and the kernel time (torch.profiler's summed GPU activities per call). The error is against float64 MATH on the same
inputs and mask, as every backend's. On the CPU it times with the engine's threads (``cpu_threads``). The first
call's compile time is reported apart, never in a sample.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from ...core.calls.flex_alternative import FlexCost, FlexSpec, refusal
from ..measuring import cpu_threads
from ..measuring.cpu_allocator import settle_allocator
from ..measuring.environment import make_current
from ..measuring.quality import compare, reference_output
from ..measuring.sdpa_call import Inputs
from .call_match import DiffersFromTheCall, call_mask, matched
from .code_clocks import answer_line, timed


def run_code(spec: FlexSpec, inputs: Inputs, key_keep: torch.Tensor | None) -> Callable[[], torch.Tensor]:
    """The spec's code run as written: its lines but the last now (compile, block mask), the last (the call) by each
    call of what this returns, which gives the call's ``out``."""
    scope = {"torch": torch, "q": inputs.q, "k": inputs.k, "v": inputs.v, "key_keep": key_keep}
    setup, call = spec.code.rsplit("\n", 1)
    exec(compile(setup, "<advice code>", "exec"), scope)  # noqa: S102 - the code the advice offers, run to check it
    the_call = compile(call, "<advice code>", "exec")

    def out() -> torch.Tensor:
        exec(the_call, scope)  # noqa: S102
        # taken out of the scope: kept there, the last call's autograd graph (and its AccumulateGrad nodes, made on
        # the warm-up's stream) stayed alive into the CUDA graph's capture, which then failed (an H100, torch 2.11)
        return scope.pop("out")

    return out


def _step(out: Callable[[], torch.Tensor], inputs: Inputs) -> Callable[[], object]:
    if not inputs.workload.backward:
        return out
    q, k, v, grad_out = inputs.q, inputs.k, inputs.v, inputs.grad_out

    def forward_backward():
        return torch.autograd.grad(out(), (q, k, v), grad_out)

    return forward_backward


def measure(spec: FlexSpec) -> FlexCost:
    device = torch.device(spec.device)
    make_current(device)
    inputs = Inputs.make(spec.workload, device)
    attn_mask, causal, key_keep = call_mask(inputs, spec.mask_form)
    out = run_code(spec, inputs, key_keep)
    step = _step(out, inputs)
    started = time.monotonic()
    step()  # compiles
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    compile_s = time.monotonic() - started
    # in the grad mode of the timed calls: Dynamo guards on it, and another mode would compile again
    result = out().detach()
    with torch.no_grad():
        own = F.scaled_dot_product_attention(inputs.q, inputs.k, inputs.v, attn_mask=attn_mask, is_causal=causal,
                                             enable_gqa=inputs.workload.gqa)
    agreement = matched(result, own, inputs.q.dtype)
    error, _ = compare(result, reference_output(inputs, attn_mask=attn_mask, is_causal=causal))
    clocks = timed(step, device)
    return FlexCost(clocks.eager, clocks.gpu, clocks.kernel_us, error, clocks.peak_mib, compile_s, clocks.note,
                    agreement)


def main() -> int:
    specs = [FlexSpec.from_dict(d) for d in json.loads(sys.stdin.read())["specs"]]
    cpu_threads.leave_a_core()  # the engine's rule on the CPU, so FlexAttention is timed as the backends were
    settle_allocator()  # and its allocator regime
    for spec in specs:
        why = refusal(spec.workload, spec.device)
        answer = {"error": why} if why else answer_line(measure, spec, (DiffersFromTheCall,))
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
