"""Why the packed child's host clock moves between runs: the padded Llama's training call (seq 2048, 60 % padding,
transformers' layouts) and varlen_attn's code, forward alone and forward+backward, timed on the host (calls launched
back to back, timed before the final synchronize) four ways, the code and the call in alternation each round:

- ``as-engine``: 8 calls right after a synchronize (``engine/measuring/clocks.host_us``);
- ``spun``: the same after 20 ms of the host spinning (a host that was waiting for the GPU, woken up);
- ``long``: 32 calls;
- ``busy-gpu``: 8 calls behind 20 ms of queued GPU work, the host running ahead as in a GPU-bound program.

One JSON line per round: each way's median µs a call of the code and of the call, and their difference.

Usage: python3 scripts/diagnostics/diag_packed_host_forward.py [--rounds 4] [--samples 7]
"""

import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F
from padded_llama_call import padded_calls

from sdpa_tui.core.calls.packed_alternative import VARLEN
from sdpa_tui.engine.costs.packed_cost import run_code

parser = argparse.ArgumentParser()
parser.add_argument("--rounds", type=int, default=4)
parser.add_argument("--samples", type=int, default=7)
args = parser.parse_args()
device = torch.device("cuda")
call = next(c for c in padded_calls(2048, "0.6", "blhd,bhld,bhld", device) if c.grad)
code = run_code(dict(call.spec.codes)[VARLEN], call.names)
i = call.inputs
steps = {
    "code forward": code, "call forward": lambda: F.scaled_dot_product_attention(i.q, i.k, i.v,
                                                                                 attn_mask=call.attn_mask),
    "code fwd+bwd": call.step(code), "call fwd+bwd": call.sdpa_step(),
}
big = torch.randn(4096, 4096, device=device, dtype=torch.bfloat16)


def queue_gpu(ms: float) -> None:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    big @ big
    end.record()
    end.synchronize()
    for _ in range(max(1, round(ms / start.elapsed_time(end)))):
        big @ big


def host_us(step, way: str) -> float:
    torch.cuda.synchronize()
    calls = 32 if way == "long" else 8
    if way == "spun":
        until = time.perf_counter() + 0.020
        while time.perf_counter() < until:
            pass
    if way == "busy-gpu":
        queue_gpu(20.0)
    start = time.perf_counter()
    for _ in range(calls):
        step()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed * 1e6 / calls


for step in steps.values():
    for _ in range(3):
        step()
for r in range(args.rounds):
    row = {"round": r}
    for way in ("as-engine", "spun", "long", "busy-gpu"):
        got = {name: [] for name in steps}
        for _ in range(args.samples):
            for name, step in steps.items():
                got[name].append(host_us(step, way))
        med = {name: statistics.median(v) for name, v in got.items()}
        row[way] = {**{k: round(v, 1) for k, v in med.items()},
                    "added forward": round(med["code forward"] - med["call forward"], 1),
                    "added fwd+bwd": round(med["code fwd+bwd"] - med["call fwd+bwd"], 1)}
    print(json.dumps(row), flush=True)
