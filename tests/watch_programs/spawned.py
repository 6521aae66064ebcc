"""``torch.multiprocessing.spawn`` of 2 gloo ranks under ``sdpa-tui watch`` (CPU): fresh interpreters, no RANK
in their environment (the rank comes from torch.distributed). Rank r makes 2 + r calls."""

import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F


def work(rank: int, world: int, init: str) -> None:
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    q = torch.randn(1, 2, 16, 8)
    for _ in range(2 + rank):
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    init = "file://" + os.path.join(sys.argv[1], "rendezvous")
    mp.spawn(work, args=(2, init), nprocs=2)
    print("spawned ranks done")
