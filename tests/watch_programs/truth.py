"""A program to hold ``sdpa-tui watch`` against torch.profiler on a GPU (benchmarks/watch_truth/watch_truth.py runs it).

A transformers Llama from a config (random weights, bf16, GQA 16/4 heads, head dim 64): inference on a
causal batch and on a padded batch, then training steps; a head-dim-256 call inside
``sdpa_kernel([EFFICIENT, MATH])``; a ``torch.compile``'d attention block, forward and backward.
Prints one JSON line: the median training step time (ms, synchronised; all steps but two, and the second
half alone) and a checksum of the outputs.
With ``SDPA_TUI_TEST_LLAMA=large`` the training steps are GPU-bound (8 layers, hidden 2048, head dim 128, a batch
[8, 1024]: tens of ms a step on an H100) instead of host-bound (2 layers, hidden 1024, [2, 512]: about 9 ms).
With ``SDPA_TUI_TEST_STEPS=path`` every step's time (ms) and start (``time.monotonic``) go to ``path``. With ``SDPA_TUI_TEST_PROFILE=path`` the whole run is under torch.profiler and every SDPA op it saw (name,
input shapes, its kernels and their summed time, by torch's own attribution) is written to ``path``.
"""

import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import LlamaConfig, LlamaForCausalLM

SDPA_OPS = ("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_")


LARGE = os.environ.get("SDPA_TUI_TEST_LLAMA") == "large"


def build():
    torch.manual_seed(0)
    width = dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8) if LARGE else \
        dict(hidden_size=1024, intermediate_size=2048, num_hidden_layers=2)
    config = LlamaConfig(vocab_size=1024, num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=1024,
                         attn_implementation="sdpa", **width)
    return LlamaForCausalLM(config).to("cuda", torch.bfloat16)


@torch.compile
def block(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True) * 0.5


def run(model, steps: int) -> tuple[list[float], list[float], float]:
    ids = torch.randint(0, 1024, (2, 512), device="cuda")
    padded = torch.ones_like(ids)
    padded[0, :64] = 0
    total = 0.0
    with torch.no_grad():
        for _ in range(10):
            total += float(model(ids).logits.float().sum())
            total += float(model(ids[:, :256], attention_mask=padded[:, :256]).logits.float().sum())
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    train = torch.randint(0, 1024, (8, 1024), device="cuda") if LARGE else ids
    times, starts = [], []
    for _ in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        starts.append(time.monotonic())
        loss = model(train, labels=train).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
        total += float(loss)
    q = torch.randn(1, 8, 1024, 256, device="cuda", dtype=torch.bfloat16)
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        for _ in range(20):
            total += float(F.scaled_dot_product_attention(q, q, q).float().sum())
    x = torch.randn(2, 16, 1024, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    for _ in range(20):
        out = block(x, x, x)
        out.sum().backward()
        total += float(out.float().sum())
    return times, starts, total


def _kernels(event) -> list:
    found = list(event.kernels)
    for child in event.cpu_children:
        found += _kernels(child)
    return found


def profiled_ops(prof) -> list[dict]:
    """Every SDPA op with no SDPA op above it (eager: the top op; compiled: the backend op), with its kernels."""
    out = []
    for e in prof.events():
        if not e.name.startswith(SDPA_OPS):
            continue
        parent, nested = e.cpu_parent, False
        while parent is not None:
            nested = nested or parent.name.startswith(SDPA_OPS)
            parent = parent.cpu_parent
        kernels = _kernels(e)
        if nested or not kernels:  # compile-time tracing runs the op on fake tensors: no kernel
            continue
        out.append({"name": e.name, "shapes": [list(s) for s in e.input_shapes[:4]],
                    "kernels": [k.name for k in kernels], "kernel_us": sum(k.duration for k in kernels)})
    return out


model = build()
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 12
path = os.environ.get("SDPA_TUI_TEST_PROFILE")
if path:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        times, starts, total = run(model, steps)
    with open(path, "w") as f:
        json.dump(profiled_ops(prof), f)
else:
    times, starts, total = run(model, steps)
if os.environ.get("SDPA_TUI_TEST_STEPS"):  # every step's time (benchmarks/watch_cost/watch_step_cost.py)
    with open(os.environ["SDPA_TUI_TEST_STEPS"], "w") as f:
        json.dump({"step_ms": times, "start_s": starts}, f)
# the median step, and the median of the second half (after watch's coverage bursts of the first steps)
print(json.dumps({"step_ms": statistics.median(times[2:]), "late_step_ms": statistics.median(times[len(times) // 2:]),
                  "total": total}))
