"""Where packed attention's time goes on a GPU: the kernels of SDPA's call on a padded batch, of the packed code's
every-call part and of its once-per-batch part (``core/calls/packed_alternative.py``'s text, run by
``engine/costs/packed_cost.py``'s runner), forward and forward+backward, each kernel's mean µs per call from
torch.profiler; whether the lab's GPU/call clock (a CUDA graph) captures the every-call part.

Usage: python3 scripts/diagnostics/diag_packed_kernels.py OUT.json [--seq 1024] [--paddings 0.25,0.6]
    [--layouts blhd,bhld,bhld]
The call is the padded Llama's (``padded_llama_call.py``), Q, K, V laid out in memory as ``--layouts`` says.
"""

import argparse
import json
from collections import defaultdict

import torch
from padded_llama_call import padded_calls

from sdpa_tui.core.calls.packed_alternative import NESTED, VARLEN
from sdpa_tui.engine.costs.packed_cost import run_batch_part, run_code
from sdpa_tui.engine.measuring.clocks import GraphClock, eager_us

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
for call in padded_calls(args.seq, args.paddings, args.layouts, device):
    padding, lengths, grad = call.padding, call.lengths, call.grad
    entry = {"padding": padding, "lengths": lengths, "grad": grad, "sdpa": kernels(call.sdpa_step())}
    for name, code in call.spec.codes:
        try:
            every = call.step(run_code(code, call.names))
            entry[name] = {"every_call": kernels(every), "captured": captures(every),
                           "once_per_batch": kernels(run_batch_part(code, call.names))}
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
