"""A tiny Llama (GQA, a padded batch), a GPT-2 (a padded batch) and an nn.MultiheadAttention, from configs with random
weights (no download), called in a loop for a while: what a user watches live. Arguments: [seconds] (default 20)."""

import sys
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
llama = LlamaForCausalLM(LlamaConfig(
    vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=8,
    num_key_value_heads=2, max_position_embeddings=64, attn_implementation="sdpa",
)).eval()
gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=128, n_positions=32, n_embd=32, n_layer=2, n_head=4,
                                  attn_implementation="sdpa")).eval()
mha = torch.nn.MultiheadAttention(32, 4, batch_first=True)
ids = torch.randint(0, 128, (2, 16))
padded = torch.ones_like(ids)
padded[0, 12:] = 0
x = torch.randn(2, 16, 32)
end = time.monotonic() + seconds
steps = 0
with torch.no_grad():
    while time.monotonic() < end:
        llama(ids, attention_mask=padded)
        gpt2(ids, attention_mask=padded)
        mha(x, x, x, need_weights=False)
        steps += 1
        time.sleep(0.01)
print(f"{steps} steps")
