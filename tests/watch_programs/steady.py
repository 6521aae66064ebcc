"""SDPA calls at three shapes for a while, a line of output a second.

    steady.py [SECONDS (30)] [DEVICE (cpu)]     fp16 on a GPU, fp32 on the CPU
"""

import sys
import time

import torch
import torch.nn.functional as F

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
device = sys.argv[2] if len(sys.argv) > 2 else "cpu"
on = dict(device=device, dtype=torch.float32 if device == "cpu" else torch.float16)
torch.manual_seed(0)
q = torch.randn(2, 8, 64, 32, **on)
kv = torch.randn(2, 2, 64, 32, **on)
decode = torch.randn(2, 8, 1, 32, **on)
mask = torch.rand(2, 1, 64, 64, device=device) > 0.1
end = time.monotonic() + seconds
step = 0
next_line = time.monotonic()
while time.monotonic() < end:
    F.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=True)
    F.scaled_dot_product_attention(decode, kv, kv, enable_gqa=True)
    if step % 4 == 0:
        F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    step += 1
    if time.monotonic() >= next_line:
        print(f"step {step}", flush=True)
        next_line += 1.0
    time.sleep(0.002)
print(f"done after {step} steps", flush=True)
