"""SDPA's gradients in float64, from the attention equations, on a call's own q, k, v, mask and grad_out.

    S = scale * Q Kᵀ + mask,  P = softmax(S),  O = P V
    dV = Pᵀ dO,  dP = dO Vᵀ,  dS = P ∘ (dP - rowsum(dO ∘ O)),  dQ = scale * dS K,  dK = scale * dSᵀ Q

and beside each gradient the magnitude of the terms summed into it (``scale * (P ∘ (|dP| + |rowsum|)) |K|`` for dQ,
the same transposed with |Q| for dK, ``Pᵀ |dO|`` for dV): a low-precision backward's error is bounded by its
precision times that magnitude, not times the result, which cancellation can make tiny (pytorch#196678's inputs
give dQ = -960 × (a sum of terms that cancels to 0): Mem-efficient and cuDNN both read 10x "off" by the result's
size on an H100, 3e-3 by the terms'). The error reported is max |grad - ref| over the largest magnitude,
computed block by block (batch elements, key/value heads with their query heads, or a band of query rows: ``dq``
per block, ``dk`` and ``dv`` summed over the bands), so a real shape is checked without the float64 scores of the
whole call in memory. Query rows whose every key is masked are left out of ``dq``; their ``dk``/``dv`` part is
not compared when the upstream gradient on them is not zero (backends write what they like there, as in the
forward: ``output_check.py``). No autograd: this runs inside the program's backward.
"""

from __future__ import annotations

import torch

from .output_check import MAX_SCORES, block_mask, blocks, by_query_head, probabilities

GRADIENT_SCORE_BYTES = 32
"""Bytes a block of the reference may hold per query-key score: at most three float64 arrays of its scores at once
(S then P, dP, dS; |dP|'s terms are made in dP's array), and room for a float mask's float64 copy."""


def _four_d(t: torch.Tensor) -> torch.Tensor:
    return t.unsqueeze(0) if t.dim() == 3 else t


def _by_kv_head(t: torch.Tensor, group: int) -> torch.Tensor:
    """A block's per-query-head dK or dV summed over each key/value head's query heads."""
    if group == 1:
        return t
    b, h, keys, dim = t.shape
    return t.view(b, h // group, group, keys, dim).sum(2)


def reference_gradients(q, k, v, mask, causal, scale, gqa, grad_out):
    """(dq, its magnitude), (dk, …), (dv, …) in float64 (shapes of q, k, v, 4-d), the query rows whose every key
    is masked, and whether the dk/dv comparison holds (no such row received a gradient); both None where no row can
    lose every key (no mask, or torch's top-left causal one): no op is spent on them then, as each op new to the
    process loads its kernels on a GPU. Computed in the forward check's blocks (``output_check.blocks``, at
    ``GRADIENT_SCORE_BYTES`` a score): as many batch elements, else key/value heads with their query heads, else bands
    of rows, as fit in its budget: about thirty kernels a block, and few blocks a call (8 for [8, 8, 1024, 128]), not
    one per batch element and head."""
    q, k, v, grad_out = (_four_d(t.detach()) for t in (q, k, v, grad_out))
    heads, keys = q.shape[1], k.shape[2]
    group = heads // k.shape[1] if gqa else 1
    scale = 1.0 / q.shape[-1] ** 0.5 if scale is None else scale
    dq, dq_mag = (torch.zeros(q.shape, dtype=torch.float64, device=q.device) for _ in range(2))
    dk, dk_mag = (torch.zeros(k.shape, dtype=torch.float64, device=q.device) for _ in range(2))
    dv, dv_mag = (torch.zeros(v.shape, dtype=torch.float64, device=q.device) for _ in range(2))
    masking = mask is not None and not causal  # a row may lose every key
    dead_rows = torch.zeros(q.shape[:-1] + (1,), dtype=torch.bool, device=q.device) if masking else None
    kv_comparable = torch.ones((), dtype=torch.bool, device=q.device) if masking else None
    for b, hs, kvs, rs in blocks(q, k, gqa, GRADIENT_SCORE_BYTES):
        kb, vb = (by_query_head(t[b, kvs].double(), group) for t in (k, v))
        qb, gob = q[b, hs, rs].double(), grad_out[b, hs, rs].double()
        p, dead = probabilities(qb, kb, block_mask(mask, causal, b, hs, rs, keys, q.device), scale, masking)
        if masking:
            dead_rows[b, hs, rs] = dead
            kv_comparable &= ~(dead & (gob != 0).any(-1, keepdim=True)).any()
        o = torch.matmul(p, vb)
        dp = torch.matmul(gob, vb.transpose(-1, -2))
        delta = (gob * o).sum(-1, keepdim=True)
        ds = (dp - delta).mul_(p)
        ds_mag = dp.abs_().add_(delta.abs()).mul_(p)  # dP's array, reused
        del dp
        dq[b, hs, rs] = torch.matmul(ds, kb).mul_(scale)
        dq_mag[b, hs, rs] = torch.matmul(ds_mag, kb.abs()).mul_(scale)
        dk[b, kvs] += _by_kv_head(torch.matmul(ds.transpose(-1, -2), qb), group).mul_(scale)
        dk_mag[b, kvs] += _by_kv_head(torch.matmul(ds_mag.transpose(-1, -2), qb.abs()), group).mul_(scale)
        dv[b, kvs] += _by_kv_head(torch.matmul(p.transpose(-1, -2), gob), group)
        dv_mag[b, kvs] += _by_kv_head(torch.matmul(p.transpose(-1, -2), gob.abs()), group)
    return (dq, dq_mag), (dk, dk_mag), (dv, dv_mag), dead_rows, kv_comparable


def not_comparable(t) -> str:
    """Why a call's gradients cannot be compared with the float64 reference, or ""."""
    if t.q.dim() not in (3, 4) or t.k.dim() != t.q.dim():
        return f"gradients not compared: {t.q.dim()}-d inputs"
    if t.grad_out is None:
        return "gradients not compared: no upstream gradient seen"
    if t.dropout_p:
        return "gradients not compared: dropout (its random mask cannot be reproduced)"
    scores = t.q.numel() // max(t.q.shape[-1], 1) * t.k.shape[-2]
    if scores > MAX_SCORES.get(t.q.device.type, MAX_SCORES["cpu"]):
        return f"gradients not compared: the float64 reference would compute {scores:,} scores"
    return ""


def reference(t):
    """The float64 reference of a call (:func:`reference_gradients` on its tensors)."""
    with torch.no_grad():
        return reference_gradients(t.q, t.k, t.v, t.mask, t.causal, t.scale, t.gqa, t.grad_out)


def errors_against(grads, ref) -> dict[str, float]:
    """max |grad - ref| / max magnitude of the terms summed into ``ref`` (max |grad - ref| where that is 0) for each
    gradient given (None: not computed), against :func:`reference`'s result; the rows whose every key was masked
    left out of dq, and dk and dv left out where such a row received a gradient. Each gradient's two maxima go into
    one float64 tensor, read back once and divided on the host."""
    dq, dk, dv, dead, kv_comparable = ref
    named = [(name, grad, r) for name, grad, r in zip(("dq", "dk", "dv"), grads, (dq, dk, dv))
             if isinstance(grad, torch.Tensor)]
    with torch.no_grad():
        maxima = torch.ones(len(named) + 1, 2, dtype=torch.float64, device=dq[0].device)
        for row, (name, grad, (value, magnitude)) in zip(maxima, named):
            diff = (_four_d(grad.detach()).double() - value).abs()
            if name == "dq" and dead is not None:
                diff, magnitude = diff.masked_fill(dead, 0.0), magnitude.masked_fill(dead, 0.0)
            row[0], row[1] = diff.amax(), magnitude.amax()
        if kv_comparable is not None:
            maxima[-1, 0] = kv_comparable
        values = maxima.tolist()
    out = {name: (error / size if size > 0 else error) for (name, _, _), (error, size) in zip(named, values)}
    return out if values[-1][0] else {n: e for n, e in out.items() if n == "dq"}


def relative_errors(t) -> dict[str, float] | str:
    """The errors of the gradients the call's backward made (``t.grads``), or why they were not compared."""
    return not_comparable(t) or errors_against(t.grads, reference(t))
