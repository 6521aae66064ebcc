"""CUDA calls that SDPA sends to different backends: the blog shape, GQA, a bool mask, fp32, and MATH forced."""

import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

torch.manual_seed(0)
dev = "cuda"
blog = torch.randn(2, 8, 512, 64, device=dev, dtype=torch.float16)
q = torch.randn(2, 8, 256, 64, device=dev, dtype=torch.bfloat16)
kv = torch.randn(2, 2, 256, 64, device=dev, dtype=torch.bfloat16)
masked = torch.randn(2, 8, 256, 64, device=dev, dtype=torch.float16)
mask = torch.rand(2, 1, 256, 256, device=dev) > 0.1
fp32 = torch.randn(1, 4, 128, 64, device=dev)
small = torch.randn(2, 8, 128, 64, device=dev, dtype=torch.float16)
total = 0.0
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 40):
    outs = [
        F.scaled_dot_product_attention(blog, blog, blog, is_causal=True),
        F.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=True),
        F.scaled_dot_product_attention(masked, masked, masked, attn_mask=mask),
        F.scaled_dot_product_attention(fp32, fp32, fp32),
    ]
    with sdpa_kernel([SDPBackend.MATH]):
        outs.append(F.scaled_dot_product_attention(small, small, small))
    total += sum(float(o.double().sum()) for o in outs)
print(repr(total))
