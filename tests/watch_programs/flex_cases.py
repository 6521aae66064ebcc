"""Calls where FlexAttention is measured as an alternative (scripts/diagnostics/diag_flex.py's shapes, bf16): causal
[4, 16, 2048, 128], no mask [4, 16, 2048, 128], and a key-padding mask [8, 16, 1024, 64]. ``cuda`` as the argument
runs them on the GPU; without it, small CPU shapes of the same kinds."""

import sys

import torch
import torch.nn.functional as F

torch.manual_seed(0)
cuda = sys.argv[1:] == ["cuda"]
device, dtype = ("cuda", torch.bfloat16) if cuda else ("cpu", torch.float32)
big, padded = ((4, 16, 2048, 128), (8, 16, 1024, 64)) if cuda else ((1, 2, 256, 32), (2, 2, 128, 32))
total = 0.0
q = torch.randn(big, device=device, dtype=dtype)
for _ in range(20):
    total += float(F.scaled_dot_product_attention(q, q, q, is_causal=True).float().sum())
    total += float(F.scaled_dot_product_attention(q, q, q).float().sum())
p = torch.randn(padded, device=device, dtype=dtype)
keep = torch.ones(padded[0], 1, 1, padded[2], dtype=torch.bool, device=device)
keep[: padded[0] // 2, ..., padded[2] * 3 // 4:] = False
for _ in range(20):
    total += float(F.scaled_dot_product_attention(p, p, p, attn_mask=keep).float().sum())
print(repr(total))
