"""pytorch#196678's repro as a training loop: cuDNN's SDPA backward gave NaN in grad_q on an H100 (torch 2.11,
cuDNN 9.19) when a mask is passed, L % 128 == 64 and every row's logsumexp is below -88.7; L = 768 is its clean
twin. ``python grad_nan_repro.py [L] [steps] [device]``; prints each step's non-finite grad_q elements and a hash
of the gradients (outputs and gradients must be bit-identical with and without watch)."""

import hashlib
import math
import sys

import torch
import torch.nn.functional as F

L = int(sys.argv[1]) if len(sys.argv) > 1 else 704
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
device = sys.argv[3] if len(sys.argv) > 3 else "cuda"
D = 64
torch.manual_seed(0)
q = torch.randn(1, 1, L, D, device=device, dtype=torch.bfloat16) * 0.1
k = torch.randn(1, 1, L, D, device=device, dtype=torch.bfloat16) * 0.1
v = torch.randn(1, 1, L, D, device=device, dtype=torch.bfloat16)
q[..., 0], k[..., 0] = 1.0, -120 * math.sqrt(D)  # every logit ~ -120: every row's logsumexp < -88.7
q.requires_grad_()
k.requires_grad_()
v.requires_grad_()
mask = torch.ones(L, L, dtype=torch.bool, device=device).tril()[None, None]
digest = hashlib.sha256()
for step in range(steps):
    q.grad = k.grad = v.grad = None
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out.backward(torch.randn(out.shape, generator=torch.Generator(device).manual_seed(step), device=device,
                             dtype=out.dtype))
    bad = int((~torch.isfinite(q.grad)).sum())
    print(f"step {step}: grad_q non-finite {bad} of {q.grad.numel()}")
    for t in (out, q.grad, k.grad, v.grad):
        digest.update(t.detach().float().cpu().numpy().tobytes())
print("digest", digest.hexdigest())
