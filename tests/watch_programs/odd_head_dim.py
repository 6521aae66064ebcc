"""A head dim the fused kernels reject: 102 in fp32. On a GPU ([1, 8, 1024, 102] fp32, ``cuda`` as the argument) Flash and
cuDNN take no fp32 and Mem-efficient wants a head dim that is a multiple of 4 in fp32, so the call runs MATH; the
advice pads the head dim to 104 (tests/support/advice_apply.py applies it, benchmarks/watch_truth/advice_realised.py
measures it). (In bf16 Flash would take it: it pads any head dim up to 256 itself.) On the CPU ([1, 4, 512, 102] fp32) the flash kernel
takes any head dim. Prints the result, then the loop's own time per call after its first calls (synchronised, host clock:
the pads of a padded call included)."""

import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)
cuda = sys.argv[1:] == ["cuda"]
shape, dtype = ((1, 8, 1024, 102), torch.float32) if cuda else ((1, 4, 512, 102), torch.float32)
q, k, v = (torch.randn(shape, device="cuda" if cuda else "cpu", dtype=dtype) for _ in range(3))
total, calls, warm_up = 0.0, 200 if cuda else 12, 20 if cuda else 2
for i in range(calls):
    if i == warm_up:  # the first calls (plans, allocations) are not in the loop's time
        started = time.perf_counter()
    out = F.scaled_dot_product_attention(q, k, v)
    total += float(out.float().sum())
print(repr(total))
print(f"loop_us_per_call={(time.perf_counter() - started) / (calls - warm_up) * 1e6:.1f}")
