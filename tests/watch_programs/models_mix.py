"""A tiny Llama (GQA, a padded batch), a GPT-2 (a padded batch) and an nn.MultiheadAttention, from configs with random
weights (no download), called in a loop for a while: what a user watches live. Arguments: [seconds] (default 20)
[device] (default cpu) [compiled] (also a torch.compile'd causal attention each step)."""

import sys
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
device = sys.argv[2] if len(sys.argv) > 2 else "cpu"
compiled = "compiled" in sys.argv[3:]
llama = LlamaForCausalLM(LlamaConfig(
    vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=8,
    num_key_value_heads=2, max_position_embeddings=64, attn_implementation="sdpa",
)).eval()
gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=128, n_positions=32, n_embd=32, n_layer=2, n_head=4,
                                  attn_implementation="sdpa")).eval()
mha = torch.nn.MultiheadAttention(32, 4, batch_first=True).eval()
llama, gpt2, mha = (m.to(device) for m in (llama, gpt2, mha))
ids = torch.randint(0, 128, (2, 16), device=device)
padded = torch.ones_like(ids)
padded[0, 12:] = 0
x = torch.randn(2, 16, 32, device=device)
q = torch.randn(2, 4, 64, 16, device=device)


@torch.compile
def causal_attention(q):
    return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)


end = time.monotonic() + seconds
steps = 0
with torch.no_grad():
    while time.monotonic() < end:
        llama(ids, attention_mask=padded)
        gpt2(ids, attention_mask=padded)
        mha(x, x, x, need_weights=False)
        if compiled:
            causal_attention(q)
        steps += 1
        time.sleep(0.01)
print(f"{steps} steps")
