"""A torch.compile'd attention function on CUDA, then eager calls; prints Dynamo's counters as JSON.

``sdpa-tui watch`` must add no graph break and no recompile: the test compares these counters
with and without it."""

import json

import torch
import torch.nn.functional as F


@torch.compile
def attend(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True) * 2.0


torch.manual_seed(0)
q = torch.randn(2, 8, 512, 64, device="cuda", dtype=torch.float16)
total = 0.0
for _ in range(60):
    total += float(attend(q, q, q).double().sum())
for _ in range(5):
    total += float(F.scaled_dot_product_attention(q, q, q, is_causal=True).double().sum())
torch.cuda.synchronize()
from torch._dynamo.utils import counters  # noqa: E402

kept = {name: dict(counters[name]) for name in ("graph_break", "frames", "recompiles")}
kept["unique_graphs"] = counters["stats"]["unique_graphs"]
print(json.dumps({"total": total, "dynamo": kept}, sort_keys=True))
