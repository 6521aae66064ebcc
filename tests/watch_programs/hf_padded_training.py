"""Training steps of a transformers Llama from a config (random weights, no download) on padded batches: the
attention gets a mask and the backward runs through SDPA. Prints the losses and a hash of the final gradients and
weights (bit-identical with and without watch). ``python hf_padded_training.py [device] [dtype] [steps] [seq]``."""

import hashlib
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM

device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
dtype = getattr(torch, sys.argv[2]) if len(sys.argv) > 2 else torch.float32
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 4
seq = int(sys.argv[4]) if len(sys.argv) > 4 else 32
torch.manual_seed(0)
big = device != "cpu"
model = LlamaForCausalLM(LlamaConfig(
    vocab_size=1024 if big else 128, hidden_size=512 if big else 64, intermediate_size=1024 if big else 128,
    num_hidden_layers=4 if big else 2, num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=4096,
    attn_implementation="sdpa",
)).to(device, dtype)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
ids = torch.randint(0, model.config.vocab_size, (4, seq), device=device)
keep = torch.ones_like(ids)
keep[0, : seq // 4] = 0  # left padding, as batched generation and DPO pairs have
keep[2, : seq // 2] = 0
labels = ids.masked_fill(keep == 0, -100)
losses = []
for _ in range(steps):
    loss = model(ids, attention_mask=keep, labels=labels).loss
    loss.backward()
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.grad.detach().float().cpu().numpy().tobytes())
    optimizer.step()
    optimizer.zero_grad()
    losses.append(loss.item())
for p in model.parameters():
    digest.update(p.detach().float().cpu().numpy().tobytes())
print("losses", " ".join(repr(x) for x in losses), "digest", digest.hexdigest())
