"""A 2-rank gloo job for ``torchrun --nproc_per_node 2`` under ``sdpa-tui watch`` (CPU).

Rank r makes 3 + 2r causal calls of one shape (``--device cuda``: 200 + 100r); rank 1 also 2 calls of another. ``--crash-rank R``:
after a barrier (every rank's calls made) rank R raises while the others wait, so torchrun ends them.
Prints one line per rank: ``rank R done``.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--crash-rank", type=int, default=-1)
parser.add_argument("--device", default="cpu", help="cuda: each rank on GPU LOCAL_RANK mod the GPUs there (gloo)")
args = parser.parse_args()
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)
device = torch.device(args.device)
if device.type == "cuda":
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count())
    torch.cuda.set_device(device)
calls = 3 + 2 * rank if device.type == "cpu" else 200 + 100 * rank  # on a GPU: enough for kernel times
q = torch.randn(1, 2, 16, 8, device=device)
total = torch.zeros(1, device=device)
for _ in range(calls):
    total += F.scaled_dot_product_attention(q, q, q, is_causal=True).sum()
if rank == 1:
    k = torch.randn(1, 2, 32, 8, device=device)
    for _ in range(2):
        total += F.scaled_dot_product_attention(q, k, k).sum()
dist.all_reduce(total.cpu())
dist.barrier()
if args.crash_rank == rank:
    time.sleep(1.0)  # the others' states are sent meanwhile (twice a second)
    raise RuntimeError(f"rank {rank} fails on purpose")
if args.crash_rank >= 0:
    time.sleep(30)  # ended by torchrun when the failing rank exits
dist.destroy_process_group()
print(f"rank {rank} done", flush=True)
