"""A training program to time plain and under ``sdpa-tui watch`` (benchmarks/watch_cost/watch_program_cost.py): a
transformers Llama from a config (random weights, no download) trained STEPS steps on one batch shape, with an evaluation (no
gradients, a shorter batch: another signature) every ``EVAL_EVERY`` steps, as a training loop has.

``large`` is truth.py's GPU-bound Llama (8 layers, hidden 2048, GQA 16/4 heads, head dim 128, bf16, a batch
[8, 1024]: about 59 ms a step on an H100); ``tiny`` runs anywhere in a fraction of a second (float32, 2 layers).
Writes its own clock to OUT as JSON: when its first line ran, when its loop began and ended (``time.time``), and
every training step's time (ms, the device synchronised); and the GPU's name (None on the CPU).

    python3 training.py OUT STEPS [cuda|cpu] [large|tiny]
"""

import time

started = time.time()

import json  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

SIZES = {
    "large": (dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8), (8, 1024), torch.bfloat16),
    "tiny": (dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2), (2, 32), torch.float32),
}
EVAL_EVERY = 50

out_path, steps = sys.argv[1], int(sys.argv[2])
device = sys.argv[3] if len(sys.argv) > 3 else "cuda"
width, (batch, seq), dtype = SIZES[sys.argv[4] if len(sys.argv) > 4 else "large"]
torch.manual_seed(0)
config = LlamaConfig(vocab_size=1024, num_attention_heads=16 if width["hidden_size"] >= 1024 else 4,
                     num_key_value_heads=4 if width["hidden_size"] >= 1024 else 2, max_position_embeddings=seq,
                     attn_implementation="sdpa", **width)
with torch.device(device):  # built on the device: a large model's random init on the CPU took about 20 s of start-up
    model = LlamaForCausalLM(config).to(dtype)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
train = torch.randint(0, 1024, (batch, seq), device=device)
held_out = torch.randint(0, 1024, (batch, seq // 2), device=device)


def sync() -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


step_ms, evals, total = [], 0, 0.0
loop = time.time()
for step in range(steps):
    sync()
    t0 = time.perf_counter()
    loss = model(train, labels=train).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    sync()
    step_ms.append((time.perf_counter() - t0) * 1e3)
    total += float(loss)
    if (step + 1) % EVAL_EVERY == 0:
        with torch.no_grad():
            total += float(model(held_out, labels=held_out).loss)
        evals += 1
ended = time.time()
device_name = torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else None
with open(out_path, "w") as f:
    json.dump({"started": started, "loop": loop, "ended": ended, "step_ms": step_ms, "evals": evals,
               "total": total, "device_name": device_name}, f)
