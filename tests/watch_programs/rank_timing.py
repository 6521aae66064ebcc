"""Each rank of a ``torchrun`` job times a small causal SDPA call, for ``benchmarks/watch_cost/watch_rank_overhead.py``:
the per-call host cost of watch's wrapper in processes it watches through its start-up hook (torchrun's workers).

It calls for ``--warm-up-s`` first (watch's first windows: the new signature, its coverage, the schedule at 3 s), then
times ``--repeats`` runs of ``--calls`` calls and prints ``rank R per_call_us=X``, the least-disturbed run's time.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cpu")
parser.add_argument("--warm-up-s", type=float, default=5.0)
parser.add_argument("--calls", type=int, default=2000)
parser.add_argument("--repeats", type=int, default=10)
args = parser.parse_args()
dist.init_process_group("gloo")
rank = dist.get_rank()
device = torch.device(args.device)
if device.type == "cuda":
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
    torch.cuda.set_device(device)
else:
    torch.set_num_threads(1)
q = torch.randn(1, 2, 16, 8, device=device)


def sync() -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


started = time.monotonic()
while time.monotonic() - started < args.warm_up_s:
    F.scaled_dot_product_attention(q, q, q, is_causal=True)
sync()
best = float("inf")
for _ in range(args.repeats):
    t0 = time.perf_counter()
    for _ in range(args.calls):
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
    sync()
    best = min(best, (time.perf_counter() - t0) / args.calls * 1e6)
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank} per_call_us={best:.3f}", flush=True)
