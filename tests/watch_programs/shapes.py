"""GQA, bool and float masks, causal, dropout, and an sdpa_kernel context around some calls."""

import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

torch.manual_seed(0)
q = torch.randn(2, 8, 16, 32)
kv = torch.randn(2, 2, 16, 32)
k = torch.randn(2, 8, 16, 32)
bool_mask = torch.rand(2, 1, 16, 16) > 0.2
float_mask = torch.randn(2, 1, 16, 16)
outs = []
for _ in range(5):
    outs.append(F.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=True))
for _ in range(3):
    outs.append(F.scaled_dot_product_attention(q, k, k, attn_mask=bool_mask))
    outs.append(F.scaled_dot_product_attention(q, k, k, attn_mask=float_mask))
outs.append(F.scaled_dot_product_attention(q, k, k, dropout_p=0.5))
with sdpa_kernel([SDPBackend.MATH]):
    for _ in range(2):
        outs.append(F.scaled_dot_product_attention(q, k, k, is_causal=True))
total = torch.stack([o.double().sum() for o in outs])
sys.stdout.write(" ".join(f"{x:.17g}" for x in total.tolist()) + "\n")
