"""Where packed attention's time goes on a GPU: the kernels of SDPA's call on a padded batch, of the packed code's
every-call part and of its once-per-batch part (``core/calls/packed_alternative.py``'s text, run by
``engine/costs/packed_cost.py``'s runner), forward and forward+backward, each kernel's mean µs per call from
torch.profiler; whether the lab's GPU/call clock (a CUDA graph) captures the every-call part.

Usage: python3 scripts/diagnostics/diag_packed_kernels.py OUT.json [--seq 1024] [--paddings 0.25,0.6]
    [--layouts blhd,bhld,bhld]
The shapes are the transformers Llama's of ``tests/watch_programs/hf_padded_packed.py`` on a GPU: [8, 16, seq, 64]
bf16, key/value heads repeated by transformers before SDPA, a causal and key-padding boolean [8, 1, seq, seq] mask;
Q, K, V laid out in memory as ``--layouts`` says (transformers': queries a transposed [b, l, h, d] tensor, keys and
values contiguous after their heads were repeated).
"""

import argparse
import json
from collections import defaultdict

import torch
import torch.nn.functional as F

from sdpa_tui.core.calls.call_signature import CallSignature
from sdpa_tui.core.calls.mask_forms import CAUSAL_KEY_PADDING
from sdpa_tui.core.calls.packed_alternative import NESTED, VARLEN, packed_spec
from sdpa_tui.core.padded_lengths import lengths_for_padding
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.costs.packed_cost import laid_out, passed_mask, run_batch_part, run_code
from sdpa_tui.engine.measuring.clocks import GraphClock, eager_us
from sdpa_tui.engine.measuring.sdpa_call import Inputs, kept_keys

CALLS = 20

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--seq", type=int, default=1024)
parser.add_argument("--paddings", default="0.25,0.6")
parser.add_argument("--layouts", default="blhd,bhld,bhld")
args = parser.parse_args()
device = torch.device("cuda")


def kernels(step) -> dict[str, float]:
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            step()
        torch.cuda.synchronize()
    per: dict[str, float] = defaultdict(float)
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            per[e.name[:90]] += e.device_time / CALLS
    return dict(sorted(per.items(), key=lambda kv: -kv[1]))


def captures(step) -> str:
    """Whether the lab's GPU/call clock captures ``step`` in a CUDA graph, or why not."""
    clock = GraphClock(step, device, eager_us(step, device, 3))
    answer = "yes" if clock.method == "graph" else f"no: {clock.capture_error}"[:200]
    clock.release()
    return answer


results = []
for padding in (float(p) for p in args.paddings.split(",")):
    lengths = lengths_for_padding(8, args.seq, padding)
    for grad in (False, True):
        w = Workload(batch=8, heads=16, kv_heads=16, seq=args.seq, kv_seq=args.seq, head_dim=64, dtype="bf16",
                     mask="padding", direction="fwd+bwd" if grad else "fwd", lengths=tuple(lengths))
        sig = CallSignature((8, 16, args.seq, 64), (8, 16, args.seq, 64), "torch.bfloat16", "cuda:0", "bool",
                            (8, 1, args.seq, args.seq), grad=grad)
        spec = packed_spec(w, sig, CAUSAL_KEY_PADDING, tuple(lengths))
        inputs = Inputs.make(spec.workload, device)
        inputs.q, inputs.k, inputs.v = (laid_out(t, lay) for t, lay in zip((inputs.q, inputs.k, inputs.v),
                                                                           args.layouts.split(",")))
        attn_mask, _ = passed_mask(spec, kept_keys(spec.workload, device), inputs.q.dtype)
        names = {"q": inputs.q, "k": inputs.k, "v": inputs.v, "attn_mask": attn_mask}

        def stepper(out):
            if not grad:
                return lambda: out()
            return lambda: torch.autograd.grad(out(), (inputs.q, inputs.k, inputs.v), inputs.grad_out)

        entry = {"padding": padding, "lengths": lengths, "grad": grad,
                 "sdpa": kernels(stepper(lambda: F.scaled_dot_product_attention(
                     inputs.q, inputs.k, inputs.v, attn_mask=attn_mask)))}
        for name, code in spec.codes:
            try:
                every = stepper(run_code(code, names))
                entry[name] = {"every_call": kernels(every), "captured": captures(every),
                               "once_per_batch": kernels(run_batch_part(code, names))}
            except Exception as exc:  # noqa: BLE001 - said in the output
                entry[name] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}
        results.append(entry)
        print(f"=== padding {padding:.0%} {'fwd+bwd' if grad else 'fwd'} lengths {lengths}")
        print(f"  SDPA (padded): {sum(entry['sdpa'].values()):8.1f} µs   " +
              "; ".join(f"{k[:50]} {v:.1f}" for k, v in list(entry["sdpa"].items())[:4]))
        for name in (VARLEN, NESTED):
            e = entry[name]
            if "error" in e:
                print(f"  {name}: {e['error']}")
                continue
            print(f"  {name} every call: {sum(e['every_call'].values()):8.1f} µs (graph: {e['captured']})   " +
                  "; ".join(f"{k[:50]} {v:.1f}" for k, v in list(e["every_call"].items())[:6]))
            print(f"  {name} once per batch: {sum(e['once_per_batch'].values()):8.1f} µs")
with open(args.out, "w") as f:
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "seq": args.seq,
               "layouts": args.layouts,
               "results": results}, f, indent=1)
