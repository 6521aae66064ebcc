"""The SDPA backend flags and priority order in force, as one small integer for the probe's key.

Reading four flags and the priority order on every SDPA call costs more than the rest of the
key. Instead, torch's setters (``torch._C._set_sdp_use_*``, ``_set_sdp_priority_order``: what
``sdpa_kernel`` and ``torch.backends.cuda.enable_*_sdp`` call, looked up at call time) are
wrapped to re-read the state after each change, and the state is interned: the same flags give
the same token, so an ``sdpa_kernel`` block entered in a loop adds no new signature. The probe's
background thread also re-reads it, for a change made some other way.
"""

from __future__ import annotations

import threading

import torch

from ..rebindings import Rebindings

FLAG_GETTERS = (
    ("FLASH_ATTENTION", "_get_flash_sdp_enabled"),
    ("EFFICIENT_ATTENTION", "_get_mem_efficient_sdp_enabled"),
    ("MATH", "_get_math_sdp_enabled"),
    ("CUDNN_ATTENTION", "_get_cudnn_sdp_enabled"),
)
_OTHER_GETTERS = ("_get_overrideable_sdp_enabled", "_get_fa3_sdp_enabled")
_SETTER_PREFIXES = ("_set_sdp_use_", "_set_sdp_priority_order")


class FlagState:
    """``token``: an int naming the flags and priority order now in force (read it, never set it)."""

    def __init__(self) -> None:
        c = torch._C
        self._flags = [(name, getattr(c, getter)) for name, getter in FLAG_GETTERS if hasattr(c, getter)]
        self._others = [getattr(c, getter) for getter in _OTHER_GETTERS if hasattr(c, getter)]
        self._priority = getattr(c, "_get_sdp_priority_order", None)
        self._ids: dict[tuple, int] = {}
        self._states: list[tuple] = []
        self._lock = threading.Lock()
        self.token = 0
        self.frozen = False  # while the probe forces a backend to read a reason: not the program's flags
        self.refresh()

    def read(self) -> tuple:
        flags = tuple(name for name, get in self._flags if get())
        others = tuple(bool(get()) for get in self._others)
        priority = tuple(int(code) for code in self._priority()) if self._priority is not None else ()
        return flags, priority, others

    def refresh(self) -> int:
        """Re-read torch's state; returns the token now in force (unchanged while frozen)."""
        if self.frozen:
            return self.token
        with self._lock:
            state = self.read()
            token = self._ids.get(state)
            if token is None:
                token = self._ids[state] = len(self._states)
                self._states.append(state)
            self.token = token
            return token

    def flags(self, token: int) -> tuple[str, ...]:
        """The enabled backends' ``SDPBackend`` names under ``token``."""
        return self._states[token][0]

    def after_fork_in_child(self) -> None:
        self._lock = threading.Lock()

    def watch_setters(self, rebind: Rebindings) -> None:
        """Wrap torch's setters so that every change refreshes the token."""
        c = torch._C
        for name in dir(c):
            if name.startswith(_SETTER_PREFIXES) and callable(getattr(c, name)):
                rebind.set(c, name, self._wrap(getattr(c, name)))

    def _wrap(self, setter):
        refresh = self.refresh
        is_compiling = torch.compiler.is_compiling

        def set_and_refresh(*args, **kwargs):
            result = setter(*args, **kwargs)
            if not is_compiling():  # traced by Dynamo: the setter alone, as without watch
                refresh()
            return result

        set_and_refresh.__name__ = getattr(setter, "__name__", "setter")
        set_and_refresh.__doc__ = setter.__doc__
        set_and_refresh.__wrapped__ = setter
        return set_and_refresh
