"""On a GPU: truth.py's padded Llama call (bf16, left padding of 64 in sequence 0) under each backend, against
float64 MATH, with the error split between query rows that have a key to attend to and rows whose every key is
masked. Prints a table; used to read an output check that failed (docs/lab-notes/watch-truth.md)."""

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
config = LlamaConfig(vocab_size=1024, hidden_size=1024, intermediate_size=2048, num_hidden_layers=2,
                     num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=1024,
                     attn_implementation="sdpa")
model = LlamaForCausalLM(config).to("cuda", torch.bfloat16)
ids = torch.randint(0, 1024, (2, 256), device="cuda")
padded = torch.ones_like(ids)
padded[0, :64] = 0
seen = []
real = F.scaled_dot_product_attention


def spy(q, k, v, attn_mask=None, **kw):
    seen.append((q, k, v, attn_mask, kw))
    return real(q, k, v, attn_mask=attn_mask, **kw)


F.scaled_dot_product_attention = spy
with torch.no_grad():
    model(ids, attention_mask=padded)
F.scaled_dot_product_attention = real
q, k, v, mask, kw = seen[0]
print("q", tuple(q.shape), "k", tuple(k.shape), "mask", None if mask is None else (tuple(mask.shape), mask.dtype), kw)
allowed = mask if mask.dtype == torch.bool else mask > float("-inf")
dead = ~allowed.any(-1)  # [b, 1, rows]
print("query rows with every key masked:", int(dead.sum()), "of", dead.numel())
gqa = kw.get("enable_gqa", False)
ref = torch.ops.aten._scaled_dot_product_attention_math(
    q.double(), k.double(), v.double(),
    torch.zeros(mask.shape, dtype=torch.float64, device="cuda").masked_fill(~allowed, float("-inf")),
    0.0, False, scale=kw.get("scale"), enable_gqa=gqa)[0]
if not gqa and k.shape[1] != q.shape[1]:
    pass
size = float(ref.abs().max())
for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH):
    try:
        with sdpa_kernel([backend]):
            out = real(q, k, v, attn_mask=mask, **kw)
    except RuntimeError as exc:
        print(backend.name, "not run:", str(exc).splitlines()[0][:100])
        continue
    err = (out.double() - ref).abs().amax(-1)  # [b, h, rows]
    live = (~dead).expand_as(err)
    print(f"{backend.name:22} rel err live rows {float(err[live].max()) / size:.1e}  "
          f"masked rows {float(err[~live].max()) / size if (~live).any() else 0:.1e}  "
          f"|out| on masked rows {float(out[~live.unsqueeze(-1).expand_as(out)].abs().max()) if (~live).any() else 0:.3f}"
          f"  ref there {float(ref[~live.unsqueeze(-1).expand_as(ref)].abs().max()) if (~live).any() else 0:.3f}")
