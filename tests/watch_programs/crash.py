"""Two SDPA calls, then an exception: the calls must stay in the report, with the traceback."""

import torch
import torch.nn.functional as F

q = torch.randn(1, 2, 8, 16)
for _ in range(2):
    F.scaled_dot_product_attention(q, q, q)
raise RuntimeError("the watched program crashed on purpose at key_keep[b, kv_idx]")  # brackets: not Rich markup
