"""The kinds of ATen ops a piece of code runs, seen under a dispatch mode: on a GPU each kind new to a process loads
its kernels at its first use (30 to 120 ms an op on an H200), so watch's checks are held to few kinds."""

from __future__ import annotations

from torch.utils._python_dispatch import TorchDispatchMode


class OpKinds(TorchDispatchMode):
    """``with OpKinds() as kinds:``; then ``kinds.names``, the ops' names (``add``, ``_softmax``, ...)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))
