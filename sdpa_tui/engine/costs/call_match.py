"""A watched call rebuilt on the lab's inputs, and an alternative's output held against the call's: what the measuring
children run before any code is offered (FlexAttention's, ``flex_cost.py``; the rewrites' and backend switches',
``code_check.py``)."""

from __future__ import annotations

import torch

from ...core.calls.call_signature import CallSignature, dtype_name
from ...core.calls.mask_forms import CAUSAL, CAUSAL_KEY_PADDING, KEY_PADDING
from ...core.calls.watched_calls import OUTPUT_TOLERANCE
from ..measuring.quality import compare
from ..measuring.sdpa_call import Inputs, kept_keys

DIFFERS = "its output differs from the call's SDPA output on the same inputs"


class DiffersFromTheCall(Exception):
    """The code's output is not SDPA's for the call: the code is not offered."""


def call_mask(inputs: Inputs, mask_form: str) -> tuple[torch.Tensor | None, bool, torch.Tensor | None]:
    """The call's mask on the lab's inputs, as SDPA takes it (``attn_mask``, ``is_causal``), and ``key_keep``, the
    [batch, kv_len] mask the code reads (a program's own, as a user would pass it)."""
    w = inputs.workload
    if mask_form == CAUSAL:
        return None, True, None
    if mask_form not in (KEY_PADDING, CAUSAL_KEY_PADDING):
        return None, False, None
    key_keep = kept_keys(w, inputs.q.device)  # as the lab's key-padding mask (calls.Inputs)
    mask = key_keep[:, None, None, :]
    if mask_form == CAUSAL_KEY_PADDING:
        mask = mask & _triangle(inputs)
    return mask, False, key_keep


def passed_mask(inputs: Inputs, signature: CallSignature, mask_form: str) -> torch.Tensor | None:
    """The ``attn_mask`` the call passed, on the lab's inputs: of its form (a causal one as the triangle), of its kind
    (a float mask adds 0 where a key is kept, -inf where not); a mask of no form here, or not read, as a mask of its
    kind that is none of them (random keys kept per head, the first always; or a random bias)."""
    if signature.mask == "none":
        return None
    w, q = inputs.workload, inputs.q
    padding = call_mask(inputs, mask_form)[0]
    if mask_form == CAUSAL:
        keep = _triangle(inputs)
    elif padding is not None:
        keep = padding
    else:
        gen = torch.Generator(device=q.device).manual_seed(1)
        if signature.mask == "float":
            return torch.randn(w.batch, w.heads, w.seq, w.kv_seq, generator=gen, device=q.device, dtype=q.dtype)
        keep = torch.rand(w.batch, w.heads, w.seq, w.kv_seq, generator=gen, device=q.device) < 0.75
        keep[..., 0] = True
    if signature.mask == "float":
        return torch.zeros(keep.shape, device=q.device, dtype=q.dtype).masked_fill(~keep, float("-inf"))
    return keep


def _triangle(inputs: Inputs) -> torch.Tensor:
    w = inputs.workload
    return torch.ones(w.seq, w.kv_seq, dtype=torch.bool, device=inputs.q.device).tril()


def matched(out: torch.Tensor, own: torch.Tensor, dtype: torch.dtype) -> float:
    """max |out - own| / max |own|, ``own`` the call's output on the same inputs; raises :class:`DiffersFromTheCall`
    where the shapes differ or beyond ``dtype``'s tolerance."""
    if out.shape != own.shape:
        raise DiffersFromTheCall(f"its output is {list(out.shape)} where the call's is {list(own.shape)}; not offered")
    _, rel = compare(out, own.double())
    tolerance = OUTPUT_TOLERANCE.get(str(dtype), 3e-2)
    if not rel <= tolerance:  # NaN too
        raise DiffersFromTheCall(f"{DIFFERS}: max rel err {rel:.1e} > {tolerance:.0e} ({dtype_name(str(dtype))}); not offered")
    return rel
