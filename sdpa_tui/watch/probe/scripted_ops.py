"""TorchScript and the functions watch rebinds: ``torch.jit.script`` compiles a call of ``torch.<name>`` (or of
``F.scaled_dot_product_attention``) as the aten op it finds by the function's id; a Python function in its place
would be compiled from its source and fail (``nn.MultiheadAttention`` could not be scripted under watch). Each
rebound function is registered as its op: scripted code calls the op itself, unwatched, as before."""

from __future__ import annotations

from collections.abc import Callable


def script_as_op(function: Callable, op: str) -> bool:
    """``op``: the aten op's name, e.g. ``aten::scaled_dot_product_attention``; False where torch has no table."""
    try:
        from torch.jit import _builtins

        _builtins._register_builtin(function, op)
        return True
    except (ImportError, AttributeError):  # a torch without the table: scripting such code fails, eager calls count
        return False


def forget_op(function: Callable) -> None:
    """Undo :func:`script_as_op` (the table is keyed by ``id``: a later object at the same address is no op)."""
    from torch.jit import _builtins

    _builtins._get_builtin_table().pop(id(function), None)
