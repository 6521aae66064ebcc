"""The pattern of pytorch#177712: a BERT from a config (no padding, so no attention mask) trained a few
steps eager, then the same model under ``torch.compile``. Eager transformers passes ``attn_mask=None``; the
compiled graph may carry a mask tensor instead, and SDPA then picks another backend.

Arguments: [device] [dtype] [steps], e.g. ``cuda bfloat16 20`` (default: cpu float32 3).
With ``SDPA_TUI_TEST_PROFILE=path`` one eager and one compiled step (after the compile) run under
torch.profiler and each SDPA backend op (name, input shapes, phase) goes to ``path`` as JSON.
Prints the sum of the last outputs, so a test can check that watching changed nothing.
"""

import json
import os
import sys

import torch
from transformers import BertConfig, BertModel

device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
dtype = getattr(torch, sys.argv[2]) if len(sys.argv) > 2 else torch.float32
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
torch.manual_seed(0)
small = device == "cpu"
model = BertModel(BertConfig(
    vocab_size=128, hidden_size=64 if small else 1024, num_hidden_layers=2, num_attention_heads=4 if small else 16,
    intermediate_size=128 if small else 4096, max_position_embeddings=512, attn_implementation="sdpa",
)).to(device, dtype)
ids = torch.randint(0, 128, (2, 32) if small else (8, 512), device=device)


def step(m) -> float:
    out = m(ids).last_hidden_state
    out.float().sum().backward()
    return float(out.detach().double().sum())


compiled = torch.compile(model)
total = 0.0
for m in (model, compiled):
    for _ in range(steps):
        total = step(m)
path = os.environ.get("SDPA_TUI_TEST_PROFILE")
if path:
    ops = []
    for phase, m in (("eager", model), ("compiled", compiled)):
        with torch.profiler.profile(record_shapes=True) as prof:
            step(m)
        ops += [{"phase": phase, "name": e.name, "shapes": [list(s) for s in e.input_shapes[:4]]}
                for e in prof.events() if e.name.startswith("aten::_scaled_dot_product_")
                or e.name.startswith(("aten::_flash_attention", "aten::_efficient_attention", "aten::_cudnn"))]
    with open(path, "w") as f:
        json.dump(ops, f)
sys.stdout.write(f"{total:.17g}\n")
