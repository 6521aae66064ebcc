"""A call kept on MATH by an ``sdpa_kernel`` context where the CPU's flash kernel is faster ([1, 4, 1024, 64] fp32,
one torch thread as the lab's CPU clock): the advice's line replaces the context, and watch measures it again
(tests/processes/watch/test_advice_realised.py, benchmarks/watch_truth/advice_realised.py). On a GPU (``cuda`` as the
argument) the call is [1, 8, 1024, 256] bf16 kept on Mem-efficient or MATH, as in truth.py."""

import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

torch.set_num_threads(1)
torch.manual_seed(0)
cuda = sys.argv[1:] == ["cuda"]
q = torch.randn(1, 8, 1024, 256, device="cuda", dtype=torch.bfloat16) if cuda else torch.randn(1, 4, 1024, 64)
total = 0.0
with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH] if cuda else [SDPBackend.MATH]):
    for _ in range(200 if cuda else 12):
        total += float(F.scaled_dot_product_attention(q, q, q).float().sum())
print(repr(total))
