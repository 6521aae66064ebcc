"""An fp16 attention trained a few steps: ``half_backward.py V_SCALE GRAD_SCALE``. At 1 1 its gradients are
finite; at 30 3e4 the backward overflows fp16 (dq non-finite on every backend): the CPU's stand-in for a backend
whose backward makes NaN (pytorch#196678 is cuDNN's, on the GPU)."""

import sys

import torch
import torch.nn.functional as F

v_scale, grad_scale = (float(x) for x in sys.argv[1:3])
torch.manual_seed(0)
q, k = (torch.randn(1, 2, 64, 32, dtype=torch.float16, requires_grad=True) for _ in range(2))
v = (torch.randn(1, 2, 64, 32) * v_scale).half().requires_grad_()
for _ in range(3):
    out = F.scaled_dot_product_attention(q, k, v)
    out.backward(torch.full_like(out, grad_scale))
