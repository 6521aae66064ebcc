"""CUDA calls that go on for seconds after their window (after which watch detaches CUPTI), then two shapes that
appear only later, one after a pause with no CUDA call at all: each must still be profiled.

    python3 late_shapes.py [seconds of the first shape]
"""

import sys
import time

import torch
import torch.nn.functional as F

first_s = float(sys.argv[1]) if len(sys.argv) > 1 else 4.5
dev = "cuda"
a = torch.randn(2, 8, 256, 64, device=dev, dtype=torch.float16)
b = torch.randn(2, 8, 512, 64, device=dev, dtype=torch.float16)
c = torch.randn(1, 4, 128, 64, device=dev, dtype=torch.bfloat16)
total = float(F.scaled_dot_product_attention(a, a, a, is_causal=True)[0, 0, 0, 0])  # its first call: cuDNN's plan
end = time.monotonic() + first_s
while time.monotonic() < end:
    total += float(F.scaled_dot_product_attention(a, a, a, is_causal=True)[0, 0, 0, 0])
for _ in range(200):
    total += float(F.scaled_dot_product_attention(b, b, b)[0, 0, 0, 0])
time.sleep(1.5)  # no CUDA call from the program: a teardown under way must not hang the next window
for _ in range(200):
    total += float(F.scaled_dot_product_attention(c, c, c, is_causal=True)[0, 0, 0, 0])
print(repr(total))
