"""The function that replaces ``torch.nn.functional.scaled_dot_product_attention``: its fast path.

A call of a signature seen before, with no burst due or running, the signature covered and no batch
of its calls being read for the host's lead (``host_lead.py``), costs
a key (a tuple of what decides the backend), a comparison with the last key seen (a dict lookup
when it differs) and one increment; everything else goes to :class:`probe.Probe`'s slow path.
Under ``torch.compiler.is_compiling()`` (read as its two parts) the wrapper only forwards, so
Dynamo traces through it with no graph break (compiled graphs are counted by ``compiled_graphs``).
"""

from __future__ import annotations

import types
from collections.abc import Callable

import torch

from .slow_path import MODULE_CALLS, TIME_EVERY, Probe


def make_wrapper(original: Callable, probe: Probe) -> Callable:
    """The function that replaces ``torch.nn.functional.scaled_dot_product_attention``.

    The key is the cheapest that decides the backend: the three ``torch.Size`` objects, dtype,
    device, the mask's dtype and shape, the scalar arguments, whether autograd records the
    call, and the flag state's token (an int, refreshed only when flags or priority change).
    """
    table = probe.table  # cleared in place after a fork, never replaced
    last_hit = probe.last_hit  # likewise
    flag_state = probe.flag_state
    # ``torch.compiler.is_compiling()``, cheaper: Dynamo folds ``is_dynamo_compiling()`` to True while it
    # traces (the flag is then never read, so no guard on it); export and make_fx set the flag.
    dynamo_compiling = torch.compiler.is_dynamo_compiling
    compiler = torch.compiler
    if not hasattr(compiler, "_is_compiling_flag"):  # a torch without the flag: the public check alone
        dynamo_compiling, compiler = torch.compiler.is_compiling, types.SimpleNamespace(_is_compiling_flag=False)
    grad_enabled = torch.is_grad_enabled
    mask_bits = TIME_EVERY - 1

    def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                     scale=None, enable_gqa=False):
        if dynamo_compiling() or compiler._is_compiling_flag:
            return original(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
        try:
            nested = query.is_nested  # jagged shapes make no signature: counted as not inspected
            if not nested:
                signature = (
                    query.shape, key.shape, value.shape, query.dtype, query.device,
                    None if attn_mask is None else (attn_mask.dtype, attn_mask.shape),
                    is_causal, dropout_p, scale, enable_gqa,
                    grad_enabled() and (query.requires_grad or key.requires_grad or value.requires_grad),
                    flag_state.token,
                )
                hit = last_hit[0]
                if hit[0] == signature:
                    entry = hit[1]
                else:
                    entry = table.get(signature)
                    if entry is not None:
                        last_hit[0] = (signature, entry)
        except Exception:  # noqa: BLE001 - an input the key cannot describe: torch will say what is wrong
            return original(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
        if nested:
            return probe.nested_call(original, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
        if entry is None or probe.special or entry.wanted or entry.leads_due:
            return probe.slow_call(signature, entry, original, query, key, value, attn_mask, dropout_p, is_causal,
                                   scale, enable_gqa)
        count = entry.count = entry.count + 1
        if count <= MODULE_CALLS or count & mask_bits == 0:
            return probe.sampled_call(entry, original, query, key, value, attn_mask, dropout_p, is_causal, scale,
                                      enable_gqa)
        if scale is None and not enable_gqa:  # fewer keywords for torch's argument parser to read
            return original(query, key, value, attn_mask, dropout_p, is_causal)
        return original(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)

    scaled_dot_product_attention.__doc__ = original.__doc__
    scaled_dot_product_attention.__wrapped__ = original
    return scaled_dot_product_attention
