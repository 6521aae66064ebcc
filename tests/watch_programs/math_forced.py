"""A call kept on MATH by an ``sdpa_kernel`` context where the CPU's flash kernel is several times faster
([1, 4, 1024, 64] fp32): watch's advice must name Flash, what it saves, and the line that gets it."""

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

torch.manual_seed(0)
q = torch.randn(1, 4, 1024, 64)
total = 0.0
with sdpa_kernel([SDPBackend.MATH]):
    for _ in range(5):
        total += float(F.scaled_dot_product_attention(q, q, q).sum())
print(repr(total))
