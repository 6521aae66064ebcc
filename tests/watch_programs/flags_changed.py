"""A program that turns Flash off process-wide before its SDPA call: watch reads the flags as found at start, and
says the program changed them."""

import torch
import torch.nn.functional as F

torch.backends.cuda.enable_flash_sdp(False)
q = torch.randn(1, 2, 16, 8)
print(float(F.scaled_dot_product_attention(q, q, q).sum()))
