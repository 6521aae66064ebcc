"""Hugging Face models from configs with random weights (no download): a tiny Llama (forward, a few
training steps, a padded batch) and a GPT-2. Prints a checksum of every output and the final weights.
Arguments: [device] [dtype], e.g. ``cuda bfloat16`` (default: cpu, the models' own float32)."""

import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
dtype = getattr(torch, sys.argv[2]) if len(sys.argv) > 2 else torch.float32
llama = LlamaForCausalLM(LlamaConfig(
    vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=8,
    num_key_value_heads=2, max_position_embeddings=64, attn_implementation="sdpa",
)).to(device, dtype)
ids = torch.randint(0, 128, (2, 16), device=device)
sums = []
with torch.no_grad():
    sums.append(llama(ids).logits.double().sum().item())
    padded = torch.ones_like(ids)
    padded[0, :4] = 0
    sums.append(llama(ids, attention_mask=padded).logits.double().sum().item())
optimizer = torch.optim.SGD(llama.parameters(), lr=0.1)
for _ in range(3):
    loss = llama(ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    sums.append(loss.item())
sums.append(sum(p.double().sum().item() for p in llama.parameters()))
gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=128, n_positions=32, n_embd=32, n_layer=2, n_head=4,
                                  attn_implementation="sdpa")).to(device, dtype).eval()
with torch.no_grad():
    sums.append(gpt2(ids).logits.double().sum().item())
print(" ".join(repr(s) for s in sums))
