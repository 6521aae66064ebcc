"""What watching a process rebinds in torch, kept in order so that it can be put back.

``sdpa-tui watch`` never puts anything back (the program ends watched); a ``with watch():`` block of the Python API
(``sdpa_tui/api/``) does when it ends: every attribute as it was (an inherited one inherited again) and every
TorchScript registration of a rebound function removed, the last rebound first.
"""

from __future__ import annotations

from collections.abc import Callable

from .scripted_ops import forget_op, script_as_op

_MISSING = object()


class Rebindings:
    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def set(self, owner: object, name: str, value: object) -> None:
        """``setattr(owner, name, value)``, remembering what ``owner`` held itself under ``name``."""
        held = vars(owner).get(name, _MISSING)
        setattr(owner, name, value)
        self._undo.append(lambda: delattr(owner, name) if held is _MISSING else setattr(owner, name, held))

    def script_as_op(self, function: Callable, op: str) -> None:
        """:func:`scripted_ops.script_as_op`, forgotten again on :meth:`restore`."""
        if script_as_op(function, op):
            self._undo.append(lambda: forget_op(function))

    def restore(self) -> None:
        """Everything put back, the last change first."""
        while self._undo:
            self._undo.pop()()
