"""On a GPU: how long a fresh process takes to import torch, start CUDA, and run its first and second torch.profiler
session (CUPTI's start): the costs on the path to the first kernel names (issue 20, kernel identity).

    python3 scripts/diagnostics/diag_cupti_start.py
"""

import os
import time

t0 = time.monotonic()
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

t1 = time.monotonic()
torch.cuda.init()
x = torch.zeros(8, device="cuda")
torch.cuda.synchronize()
t2 = time.monotonic()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
    x.add_(1)
    torch.cuda.synchronize()
t3 = time.monotonic()
p.export_chrome_trace(os.devnull)
t4 = time.monotonic()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
    x.add_(1)
    torch.cuda.synchronize()
t5 = time.monotonic()
print(f"import torch {t1 - t0:.2f} s, CUDA start {t2 - t1:.2f} s, first profile {t3 - t2:.2f} s, "
      f"its export {t4 - t3:.2f} s, second profile {t5 - t4:.2f} s")
