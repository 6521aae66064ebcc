"""Two attention blocks compiled with Inductor: a training step and a no-grad call (they compile), then
four training steps (forward and backward) and three no-grad calls.

With ``SDPA_TUI_TEST_PROFILE=path`` the whole run is under torch.profiler and each SDPA backend op it
recorded (name, input shapes) is written to ``path`` as JSON: the reference a watched run is held against.
Prints the sum of the outputs, so a test can check that watching changed nothing.
"""

import json
import os
import sys

import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(32, 32)

    def forward(self, x):
        q = self.proj(x).view(2, 16, 4, 8).transpose(1, 2)
        return F.scaled_dot_product_attention(q, q, q, is_causal=True).transpose(1, 2).reshape(2, 16, 32)


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


def run(model, steps: int, evals: int) -> float:
    total = 0.0
    for _ in range(steps):
        out = model(x)
        out.sum().backward()
        total += float(out.double().sum())
    with torch.no_grad():
        for _ in range(evals):
            total += float(model(x).double().sum())
    return total


torch.manual_seed(0)
model = torch.compile(Model())
x = torch.randn(2, 16, 32)
total = run(model, 1, 1)  # compiles both graphs (the profiler would record the compiler's traced ops too)
path = os.environ.get("SDPA_TUI_TEST_PROFILE")
if path:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        total += run(model, 4, 3)
    ops = [{"name": e.name, "shapes": [list(s) for s in e.input_shapes[:4]]} for e in prof.events()
           if e.name.startswith("aten::_scaled_dot_product_")]
    with open(path, "w") as f:
        json.dump(ops, f)
else:
    total += run(model, 4, 3)
sys.stdout.write(f"{total:.17g}\n")
