"""One call every rewrite applies to, with arguments of its own: fp32, GQA (8 query heads, 2 K/V heads), head dim 20,
a causal mask passed as a tensor, ``scale=0.3``. Each rewrite's code (``is_causal=True``, K/V expanded, the head dim
padded, bf16) must keep the scale and what the mask means, and is run against the call before it is offered
(tests/unit/watch/test_advice_code_check.py)."""

import torch
import torch.nn.functional as F

torch.manual_seed(0)
q = torch.randn(1, 8, 128, 20)
k, v = torch.randn(1, 2, 128, 20), torch.randn(1, 2, 128, 20)
attn_mask = torch.ones(128, 128, dtype=torch.bool).tril()
total = 0.0
for _ in range(5):
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=0.3, enable_gqa=True)
    total += float(out.sum())
print(repr(total))
