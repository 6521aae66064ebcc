"""The packed child's host clocks, raw: ``engine/costs/packed_cost.measure_code`` on the padded Llama's training call
as watch builds it (seq 2048, 60 % padding, transformers' layouts, 8 calls on a mask), ``--runs`` times, each
sample of the code's and the call's host time, forward+backward and forward alone; then the same with Python's
garbage collector off. Prints one JSON line per run.

Usage: python3 scripts/diagnostics/diag_packed_host_forward.py [--runs 3] [--seq 2048]
"""

import argparse
import gc
import json
import statistics

from sdpa_tui.core.calls.call_signature import CallSignature
from sdpa_tui.core.calls.mask_forms import CAUSAL_KEY_PADDING
from sdpa_tui.core.calls.packed_alternative import VARLEN, packed_spec
from sdpa_tui.core.calls.watch_lab import lab_workload
from sdpa_tui.engine.costs.packed_cost import measure_code

parser = argparse.ArgumentParser()
parser.add_argument("--runs", type=int, default=3)
parser.add_argument("--seq", type=int, default=2048)
args = parser.parse_args()
seq = args.seq
sig = CallSignature((8, 16, seq, 64), (8, 16, seq, 64), "torch.bfloat16", "cuda:0", "bool", (8, 1, seq, seq),
                    scale=0.125, grad=True)
workload, _ = lab_workload(sig)
lengths = (2048, 965, 858, 751, 644, 537, 429, 322) if seq == 2048 else None
spec = packed_spec(workload, sig, CAUSAL_KEY_PADDING, lengths, 8, ("blhd", "bhld", "bhld"))
code = dict(spec.codes)[VARLEN]


def med(xs):
    return round(statistics.median(xs), 1) if xs else None


for gc_on in (True, False):
    for run in range(args.runs):
        if not gc_on:
            gc.disable()
        cost = measure_code(spec, code)
        gc.enable()
        print(json.dumps({
            "gc": gc_on, "run": run,
            "code_host": med(cost.host_us), "code_host_forward": med(cost.host_forward_us),
            "call_host": med(cost.call.host_us), "call_host_forward": med(cost.call.host_forward_us),
            "code_eager": med(cost.eager_us), "code_gpu": med(cost.gpu_us), "call_gpu": med(cost.call.gpu_us),
            "batch_us": cost.batch_us,
            "raw": {"code_host": [round(x) for x in cost.host_us], "code_host_forward": [round(x) for x in cost.host_forward_us],
                    "call_host_forward": [round(x) for x in cost.call.host_forward_us]},
        }), flush=True)
