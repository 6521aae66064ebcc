"""The tensors of a workload and the SDPA call measured on them (torch is imported here)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from ...core.backends import Backend
from ...core.workload import Workload

TORCH_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def sdp_backend(backend: Backend) -> SDPBackend:
    return getattr(SDPBackend, backend.value)


def forced(backends: tuple[Backend, ...]):
    """A context in which SDPA may use only these backends (torch's own flag mechanism)."""
    return sdpa_kernel([sdp_backend(b) for b in backends])


def kept_keys(w: Workload, device: torch.device) -> torch.Tensor:
    """The [batch, kv_len] key-padding mask of a padded workload, True at a kept key: each sequence's first
    ``w.lengths[b]`` keys, or where the workload gives no lengths, all but the last eighth."""
    if w.lengths:
        lengths = torch.tensor(w.lengths, device=device)
        return torch.arange(w.kv_seq, device=device)[None, :] < lengths[:, None]
    keep = torch.ones(w.batch, w.kv_seq, dtype=torch.bool, device=device)
    keep[:, w.kv_seq - w.kv_seq // 8 :] = False
    return keep


@dataclass
class Inputs:
    """Q, K, V (and mask, output gradient) of one workload on one device."""

    workload: Workload
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    mask: torch.Tensor | None
    grad_out: torch.Tensor | None

    @classmethod
    def make(cls, workload: Workload, device: torch.device, seed: int = 0) -> "Inputs":
        w = workload
        gen = torch.Generator(device=device).manual_seed(seed)
        dtype = TORCH_DTYPES[w.dtype]

        def tensor(heads: int, length: int) -> torch.Tensor:
            t = torch.randn(w.batch, heads, length, w.head_dim, generator=gen, device=device, dtype=dtype)
            return t.requires_grad_(w.backward)

        q, k, v = tensor(w.heads, w.seq), tensor(w.kv_heads, w.kv_seq), tensor(w.kv_heads, w.kv_seq)
        mask = None
        if w.mask == "padding":
            mask = kept_keys(w, device)[:, None, None, :]
        grad_out = None
        if w.backward:
            grad_out = torch.randn(w.batch, w.heads, w.seq, w.head_dim, generator=gen, device=device, dtype=dtype)
        return cls(w, q, k, v, mask, grad_out)

    def sdpa_kwargs(self) -> dict:
        kwargs: dict = {"attn_mask": self.mask, "is_causal": self.workload.causal}
        if self.workload.gqa:
            kwargs["enable_gqa"] = True
        return kwargs

    def step(self) -> Callable[[], object]:
        """One call in the workload's direction: forward, or forward and backward."""
        q, k, v, kwargs = self.q, self.k, self.v, self.sdpa_kwargs()
        if not self.workload.backward:
            return lambda: F.scaled_dot_product_attention(q, k, v, **kwargs)
        grad_out = self.grad_out

        def forward_backward():
            out = F.scaled_dot_product_attention(q, k, v, **kwargs)
            return torch.autograd.grad(out, (q, k, v), grad_out)

        return forward_backward
