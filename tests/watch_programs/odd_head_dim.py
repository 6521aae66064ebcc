"""A head dim the fused kernels reject (100: not a multiple of 8). On a GPU ([1, 8, 1024, 100] bf16, ``cuda`` as the
argument) Flash, cuDNN and Mem-efficient all say no and the call runs MATH; the advice pads the head dim to 104
(tests/advice_apply.py applies it, benchmarks/advice_realised.py measures it). On the CPU ([1, 4, 512, 100] fp32)
the flash kernel takes any head dim. Prints the result, then the loop's own time per call (synchronised, host clock:
the pads of a padded call included)."""

import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)
cuda = sys.argv[1:] == ["cuda"]
shape, dtype = ((1, 8, 1024, 100), torch.bfloat16) if cuda else ((1, 4, 512, 100), torch.float32)
q, k, v = (torch.randn(shape, device="cuda" if cuda else "cpu", dtype=dtype) for _ in range(3))
total, calls = 0.0, 200 if cuda else 12
started = time.perf_counter()
for _ in range(calls):
    out = F.scaled_dot_product_attention(q, k, v)
    total += float(out.float().sum())
print(repr(total))
print(f"loop_us_per_call={(time.perf_counter() - started) / calls * 1e6:.1f}")
