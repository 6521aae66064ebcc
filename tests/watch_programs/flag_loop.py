"""sdpa_kernel entered in a loop, with and without set_priority: one signature per flag state, not per entry."""

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

q = torch.randn(1, 2, 8, 16)
for _ in range(3):
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION], set_priority=True):
        F.scaled_dot_product_attention(q, q, q)
    with sdpa_kernel([SDPBackend.MATH]):
        F.scaled_dot_product_attention(q, q, q)
    F.scaled_dot_product_attention(q, q, q)
torch.backends.cuda.enable_math_sdp(False)
F.scaled_dot_product_attention(q, q, q)
print("ok")
