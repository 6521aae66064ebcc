"""A causal mask passed as a tensor where ``is_causal=True`` would do the same (pytorch#177712): watch reads the
mask once, at the first call, and its advice measures the call with ``is_causal=True`` instead."""

import torch
import torch.nn.functional as F

torch.manual_seed(0)
q = torch.randn(1, 4, 1024, 64)
causal = torch.ones(1024, 1024, dtype=torch.bool).tril()
total = 0.0
for _ in range(5):
    total += float(F.scaled_dot_product_attention(q, q, q, attn_mask=causal).sum())
print(repr(total))
