"""Two call sites; the second feeds SDPA a query holding a NaN. Only the second is flagged by watch's output check,
and the program prints the same numbers watched or not. Argument: the device (cpu by default; fp16 on a GPU)."""

import sys

import torch
import torch.nn.functional as F

device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
dtype = torch.float32 if device == "cpu" else torch.float16
torch.manual_seed(0)
good = torch.randn(1, 2, 32, 16, device=device, dtype=dtype)
bad = torch.randn(1, 2, 48, 16, device=device, dtype=dtype)
bad[0, 0, 3, 5] = float("nan")
finite = 0.0
for _ in range(3):
    finite += float(F.scaled_dot_product_attention(good, good, good, is_causal=True).sum())
    broken = F.scaled_dot_product_attention(bad, bad, bad)
print(repr(finite), int(torch.isnan(broken).sum()))
