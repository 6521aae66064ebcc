"""Two call sites of one signature (a tiny Llama with a padding mask called from two lines), an
nn.MultiheadAttention in eval under no_grad (its C++ fast path calls no Python SDPA), a GQA call and SDPA on jagged
nested tensors (packed attention's way). Prints a checksum of every output."""

import torch
import torch.nn.functional as F
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
llama = LlamaForCausalLM(LlamaConfig(
    vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=8,
    num_key_value_heads=2, max_position_embeddings=64, attn_implementation="sdpa",
)).eval()
ids = torch.randint(0, 128, (2, 16))
padded = torch.ones_like(ids)
padded[0, :4] = 0
attention = torch.nn.MultiheadAttention(32, 4, batch_first=True).eval()
x = torch.randn(2, 10, 32)
sums = []
with torch.no_grad():
    for _ in range(3):
        sums.append(llama(ids, attention_mask=padded).logits.double().sum().item())
    for _ in range(5):
        sums.append(llama(ids, attention_mask=padded).logits.double().sum().item())
    for _ in range(7):
        sums.append(attention(x, x, x, need_weights=False)[0].double().sum().item())
    q, kv = torch.randn(2, 8, 16, 32), torch.randn(2, 2, 16, 32)
    for _ in range(4):
        sums.append(F.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=True).double().sum().item())
    jagged = torch.nested.nested_tensor([torch.randn(5, 8, 32), torch.randn(9, 8, 32)], layout=torch.jagged)
    jagged = jagged.transpose(1, 2)  # [2, heads, jagged length, 32]
    for _ in range(3):
        sums.append(F.scaled_dot_product_attention(jagged, jagged, jagged).transpose(1, 2).values().double().sum().item())
print(" ".join(repr(s) for s in sums))
