"""Attention that watch counts but cannot inspect: SDPA reached inside C++, past the Python function watch rebinds,
and SDPA on nested tensors (whose jagged shapes no signature holds): counted where it enters.

``nn.MultiheadAttention`` in eval with autograd off takes a fast path, ``torch._native_multi_head_attention``, that
runs SDPA in C++ (``nn.TransformerEncoderLayer``'s, ``torch._transformer_encoder_layer_fwd``, does the same): no
call of ``torch.nn.functional.scaled_dot_product_attention`` is made, so no row can show its backend, time or
kernels. These functions are rebound, as SDPA is, to count their calls and note the first calls' sites and modules;
the report says how many calls watch could not inspect and where they come from. SDPA called on nested tensors
(``torch.nested``, jagged: packed attention's code) goes through the rebound function, which hands it to torch
untouched and counts it here (:func:`note_call`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ...core.calls.watched_calls import NESTED_SHAPES, UninspectedCalls
from .explain import origin
from .rebindings import Rebindings

ENTRY_POINTS: tuple[tuple[str, str], ...] = (
    ("_native_multi_head_attention",
     "nn.MultiheadAttention's fast path (eval, autograd off: torch._native_multi_head_attention)"),
    ("_transformer_encoder_layer_fwd",
     "nn.TransformerEncoderLayer's fast path (eval, autograd off: torch._transformer_encoder_layer_fwd)"),
)
"""(the function's name in ``torch``, the path in the report's words)."""
NESTED_PATH = "torch.nn.functional.scaled_dot_product_attention on nested tensors (torch.nested)"
NOTED_CALLS = 256
"""The first calls of each path note their site and module (walking the stack costs microseconds)."""


def watch_entry_points(found: list[UninspectedCalls], first_call: Callable[[], None], rebind: Rebindings) -> None:
    """Rebind each entry point that this torch has; ``found`` gets one tally per path, kept in place (a forked
    child clears them with :func:`start_over`); ``first_call`` runs at each path's first call (in each process)."""
    for name, path in ENTRY_POINTS:
        original = getattr(torch, name, None)
        if original is None:
            continue
        calls = UninspectedCalls(path)
        found.append(calls)
        counting = _counting(original, calls, first_call)
        rebind.script_as_op(counting, f"aten::{name}")
        rebind.set(torch, name, counting)


def nested_calls() -> UninspectedCalls:
    """The tally of SDPA's calls on nested tensors."""
    return UninspectedCalls(NESTED_PATH, why=NESTED_SHAPES)


def note_call(calls: UninspectedCalls, first_call: Callable[[], None], depth: int) -> None:
    """Count a call; the first calls note their site and module (the caller ``depth`` frames up)."""
    calls.count += 1
    if calls.count <= NOTED_CALLS:
        if calls.count == 1:
            first_call()
        frame = origin.caller_frame(depth + 1)
        site = origin.call_site(frame)
        calls.sites[site] = calls.sites.get(site, 0) + 1
        module = origin.module_path(frame)
        if module and module not in calls.modules:
            calls.modules.append(module)


def start_over(found: list[UninspectedCalls]) -> None:
    """In a forked child: its own calls only."""
    for calls in found:
        calls.count = 0
        calls.sites.clear()
        calls.modules.clear()


def _counting(original: Callable, calls: UninspectedCalls, first_call: Callable[[], None]) -> Callable:
    compiling = torch.compiler.is_compiling

    def entry_point(*args, **kwargs):
        if not compiling():  # a graph's run is no call here (and Dynamo traces no side effect)
            note_call(calls, first_call, 1)
        return original(*args, **kwargs)

    entry_point.__name__ = entry_point.__qualname__ = original.__name__
    entry_point.__doc__ = original.__doc__
    entry_point.__wrapped__ = original  # type: ignore[attr-defined]
    return entry_point
