"""A training program to time plain and under ``sdpa-tui watch`` (benchmarks/watch_cost/watch_program_cost.py): a model
with random weights trained STEPS steps on one batch shape, with an evaluation (no gradients, a shorter batch: another
signature) every ``EVAL_EVERY`` steps, as a training loop has.

``decoder`` is a decoder-only transformer in plain torch, with no transformers import: its start-up is torch's import,
the context and the optimizer's construction, which imports ``torch._dynamo`` (on an H200 7 to 10 s in all, the import
3.5 to 6.4 s of it: ``scripts/diagnostics/diag_program_build.py``; on a CPU machine about 2 s). Pre-norm blocks of
causal ``scaled_dot_product_attention`` and an MLP, trained with AdamW. On cuda: hidden 1024, 8 heads of 128, 6
layers, bf16, a batch [8, 1024] (GPU-bound: about 10 ms a step on an H200); on the CPU: hidden 64, 4 heads, 2 layers,
float32, a batch [2, 32]. ``large`` and ``tiny`` are transformers Llamas from a config trained with SGD: ``large`` is
truth.py's GPU-bound Llama (8 layers, hidden 2048, GQA 16/4 heads, head dim 128, bf16, a batch [8, 1024]: about 59 ms
a step on an H100, 11 to 15 s of start-up); ``tiny`` runs anywhere in a fraction of a second (float32, 2 layers).
Its definitions can be imported (the diagnostics build the same models); run as a script, it trains. Writes its
own clock to OUT as JSON: when its first line ran, when torch was imported, when the device's context was
made, when its loop began and ended (``time.time``), and every training step's time (ms, the device synchronised); and
the GPU's name (None on the CPU).

    python3 training.py OUT STEPS [cuda|cpu] [large|decoder|tiny]
"""

import time

started = time.time()

import json  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

imported = time.time()  # under watch torch was imported before the first line: this follows it at once

VOCAB = 1024
LLAMAS = {
    "large": (dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8), (8, 1024), torch.bfloat16),
    "tiny": (dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2), (2, 32), torch.float32),
}
DECODERS = {  # the decoder size by device type: (hidden, heads, layers), (batch, seq), dtype
    "cuda": ((1024, 8, 6), (8, 1024), torch.bfloat16),
    "cpu": ((64, 4, 2), (2, 32), torch.float32),
}
EVAL_EVERY = 50


class Block(torch.nn.Module):
    """Pre-norm: causal self-attention, then an MLP (4x wide, GELU), each added to the residual stream."""

    def __init__(self, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.attention_norm = torch.nn.RMSNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden, bias=False)
        self.attention_out = torch.nn.Linear(hidden, hidden, bias=False)
        self.mlp_norm = torch.nn.RMSNorm(hidden)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(hidden, 4 * hidden, bias=False), torch.nn.GELU(),
                                       torch.nn.Linear(4 * hidden, hidden, bias=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, hidden = x.shape
        q, k, v = self.qkv(self.attention_norm(x)).view(batch, seq, 3, self.heads, hidden // self.heads).unbind(2)
        # looked up on the module at each call, as transformers does: what watch counts
        attended = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                  is_causal=True)
        x = x + self.attention_out(attended.transpose(1, 2).reshape(batch, seq, hidden))
        return x + self.mlp(self.mlp_norm(x))


class Decoder(torch.nn.Module):
    """Token and position embeddings, the blocks, a final norm and the LM head; called on tokens, it returns the
    next-token loss."""

    def __init__(self, hidden: int, heads: int, layers: int, seq: int) -> None:
        super().__init__()
        self.tokens = torch.nn.Embedding(VOCAB, hidden)
        self.positions = torch.nn.Embedding(seq, hidden)
        self.blocks = torch.nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.norm = torch.nn.RMSNorm(hidden)
        self.head = torch.nn.Linear(hidden, VOCAB, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.tokens(tokens) + self.positions(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), tokens[:, 1:].flatten())


def decoder(device: str) -> tuple[Callable[[torch.Tensor], torch.Tensor], torch.optim.Optimizer, tuple[int, int]]:
    """The plain-torch decoder for ``device``: its loss on a batch, its optimizer and its batch's shape."""
    (hidden, heads, layers), (batch, seq), dtype = DECODERS[torch.device(device).type]
    with torch.device(device):
        model = Decoder(hidden, heads, layers, seq).to(dtype)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4), (batch, seq)


def llama(size: str, device: str) -> tuple[Callable[[torch.Tensor], torch.Tensor], torch.optim.Optimizer,
                                           tuple[int, int]]:
    """A transformers Llama of ``size``: its loss on a batch, its optimizer and its batch's shape."""
    from transformers import LlamaConfig, LlamaForCausalLM  # only the Llamas pay transformers' import

    width, (batch, seq), dtype = LLAMAS[size]
    config = LlamaConfig(vocab_size=VOCAB, num_attention_heads=16 if width["hidden_size"] >= 1024 else 4,
                         num_key_value_heads=4 if width["hidden_size"] >= 1024 else 2, max_position_embeddings=seq,
                         attn_implementation="sdpa", **width)
    with torch.device(device):  # built on the device: a large model's random init on the CPU took about 20 s of start-up
        model = LlamaForCausalLM(config).to(dtype)
    return (lambda tokens: model(tokens, labels=tokens).loss), torch.optim.SGD(model.parameters(), lr=1e-3), (batch, seq)


def main(argv: list[str]) -> None:
    out_path, steps = argv[1], int(argv[2])
    device = argv[3] if len(argv) > 3 else "cuda"
    size = argv[4] if len(argv) > 4 else "large"
    if device.startswith("cuda"):  # the device's context made apart, so the build's time is the model's and optimizer's
        torch.empty(0, device=device)
    device_ready = time.time()
    torch.manual_seed(0)
    loss_of, optimizer, (batch, seq) = decoder(device) if size == "decoder" else llama(size, device)
    train = torch.randint(0, VOCAB, (batch, seq), device=device)
    held_out = torch.randint(0, VOCAB, (batch, seq // 2), device=device)

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    step_ms, evals, total = [], 0, 0.0
    loop = time.time()
    for step in range(steps):
        sync()
        t0 = time.perf_counter()
        loss = loss_of(train)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        sync()
        step_ms.append((time.perf_counter() - t0) * 1e3)
        total += float(loss.detach())
        if (step + 1) % EVAL_EVERY == 0:
            with torch.no_grad():
                total += float(loss_of(held_out))
            evals += 1
    ended = time.time()
    device_name = torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else None
    with open(out_path, "w") as f:
        json.dump({"started": started, "imported": imported, "device_ready": device_ready, "loop": loop,
                   "ended": ended, "step_ms": step_ms, "evals": evals, "eval_every": EVAL_EVERY, "total": total,
                   "device_name": device_name}, f)


if __name__ == "__main__":
    main(sys.argv)
