"""Two call sites; the second feeds SDPA a query holding a NaN. Only the second is flagged by watch's output check,
and the program prints the same numbers watched or not."""

import torch
import torch.nn.functional as F

torch.manual_seed(0)
good = torch.randn(1, 2, 32, 16)
bad = torch.randn(1, 2, 48, 16)
bad[0, 0, 3, 5] = float("nan")
finite = 0.0
for _ in range(3):
    finite += float(F.scaled_dot_product_attention(good, good, good, is_causal=True).sum())
    broken = F.scaled_dot_product_attention(bad, bad, bad)
print(repr(finite), int(torch.isnan(broken).sum()))
