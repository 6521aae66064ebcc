"""What packed attention costs the host, and what a GPU-bound program gets from it: for SDPA's call on a padded batch
and the packed codes' every-call part (``core/calls/packed_alternative.py``'s text, run as the lab runs it), forward
and forward+backward:

- the host's µs per call when nothing waits (a loop of calls launched back to back, timed on the host before the
  final synchronize) against the eager clock (the same loop, synchronised);
- the calls that make the host wait for the GPU (``torch.cuda.set_sync_debug_mode("warn")``);
- the top CPU operators by self time (torch.profiler);
- "behind GPU work": each call launched after a block of matmuls that keeps the GPU busy for ``--busy-ms``, as in a
  GPU-bound training step whose host runs ahead; the wall µs per iteration minus the block's own.

Usage: python3 scripts/diagnostics/diag_packed_host.py OUT.json [--seq 2048] [--paddings 0.6] [--busy-ms 4]
"""

import argparse
import json
import warnings
from collections import defaultdict

import torch
from padded_llama_call import padded_calls

from sdpa_tui.engine.costs.packed_cost import run_code
from sdpa_tui.engine.measuring.clocks import eager_us, host_us

CALLS = 20

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--seq", type=int, default=2048)
parser.add_argument("--paddings", default="0.6")
parser.add_argument("--busy-ms", type=float, default=4.0)
parser.add_argument("--layouts", default="blhd,bhld,bhld")
args = parser.parse_args()
device = torch.device("cuda")
big = torch.randn(4096, 4096, device=device, dtype=torch.bfloat16)


def one_matmul_ms() -> float:
    for _ in range(3):
        big @ big
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        big @ big
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 10


MATMULS = max(1, round(args.busy_ms / one_matmul_ms()))


def busy() -> None:
    for _ in range(MATMULS):
        big @ big


def host_and_eager(step) -> tuple[float, float]:
    for _ in range(3):
        step()
    return host_us(step, device, CALLS), eager_us(step, device, CALLS)


def behind_gpu_work(step) -> float:
    """Wall µs per iteration of (busy block, call), minus the busy block's alone."""
    def both() -> None:
        busy()
        step()
    for body in (busy, both):
        body()
    return eager_us(both, device, CALLS) - eager_us(busy, device, CALLS)


def syncs(step) -> list[str]:
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            step()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    return sorted({str(w.message).splitlines()[0][:120] for w in caught})


def cpu_ops(step) -> list[tuple[str, float]]:
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(CALLS):
            step()
        torch.cuda.synchronize()
    per: dict[str, float] = defaultdict(float)
    for e in prof.key_averages():
        per[e.key[:80]] += e.self_cpu_time_total / CALLS
    return sorted(per.items(), key=lambda kv: -kv[1])[:12]


results = []
print(f"busy block: {MATMULS} matmuls [4096, 4096] bf16, about {MATMULS * one_matmul_ms():.2f} ms of GPU")
for call in padded_calls(args.seq, args.paddings, args.layouts, device):
    ways = {"sdpa": call.sdpa_step()}
    ways.update({name: call.step(run_code(code, call.names)) for name, code in call.spec.codes})
    print(f"=== padding {call.padding:.0%} {'fwd+bwd' if call.grad else 'fwd'} lengths {call.lengths}")
    for name, step in ways.items():
        try:
            host, eager = host_and_eager(step)
            entry = {"padding": call.padding, "grad": call.grad, "way": name, "host_us": host, "eager_us": eager,
                     "behind_gpu_work_us": behind_gpu_work(step), "syncs": syncs(step), "cpu_ops": cpu_ops(step)}
        except Exception as exc:  # noqa: BLE001 - said in the output
            print(f"  {name}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            continue
        results.append(entry)
        print(f"  {name:8s} host {host:8.1f} µs  eager {eager:8.1f} µs  behind GPU work "
              f"{entry['behind_gpu_work_us']:8.1f} µs  waits: {entry['syncs'] or 'none'}")
        print("     cpu: " + "; ".join(f"{k} {v:.0f}" for k, v in entry["cpu_ops"][:8]))
with open(args.out, "w") as f:
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "seq": args.seq,
               "busy_matmuls": MATMULS, "results": results}, f, indent=1)
