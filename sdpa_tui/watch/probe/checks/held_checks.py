"""Checks that fall due while a profiler window records run once it has stopped.

A signature's first call starts a window (``kernels/bursts.py``) and is also its first checked call: its forward
check and gradient comparison run float64 MATH, dozens of kernels that the window would record beside the
program's own. Profiled, they cost a short program twice: a 10-s decoder on an H200 paid 0.46 s of its loop with
both, 0.14 s with the checks alone and 0.03 s with the windows alone (``docs/lab-notes/watch-truth.md``, twenty-sixth
session), and its first window's trace held 13,802 events against 8,186. So a check due inside a window is held,
with the call's tensors, and runs when the window stops, on the thread that stops it: held, the decoder's checks
added 0.12 s to its loop where inside the window they had added 0.28 s (one H200, three alternated rounds).

A held check must still compare the call's own values: the program may change a tensor in place meanwhile (a
static KV cache written at the next step, q, k or v a parameter the optimizer steps). Each tensor's version counter
is read when the check is held and again when it runs; a tensor changed since makes the check owed to the
signature's next call instead (``owe``). A tensor whose version cannot be read (made under
``torch.inference_mode``) is not held: its check runs at once, inside the window, as before. A held check keeps its
call's tensors alive until the window stops (at the first SDPA call after ``bursts.MAX_BURST_S`` at the latest, or
at the program's end): one call's for each signature checked in the window.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import torch


def versions(tensors: Sequence[object]) -> tuple[int, ...] | None:
    """The version counters of the tensors among ``tensors``; None if one cannot be read."""
    try:
        return tuple(t._version for t in tensors if isinstance(t, torch.Tensor))
    except RuntimeError:  # an inference tensor has no version counter
        return None


class HeldChecks:
    """The checks held while the running window records (None: no window running)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: list[tuple[Callable[[], None], Sequence[object], tuple[int, ...], Callable[[], None]]] | None = None

    def begin(self) -> None:
        """A window has started: checks due from now on are held."""
        with self._lock:
            self._held = []

    def hold(self, run: Callable[[], None], tensors: Sequence[object], owe: Callable[[], None]) -> bool:
        """Hold ``run`` (a check of ``tensors``) until the window stops; False when no window is running or the
        tensors' versions cannot be read (the caller runs it now). ``owe``: called in its place if one of the
        tensors has changed by then."""
        seen = versions(tensors)
        if seen is None:
            return False
        with self._lock:
            if self._held is None:
                return False
            self._held.append((run, tensors, seen, owe))
            return True

    def release(self) -> int:
        """The window has stopped: run the held checks (those whose tensors changed are owed); how many ran."""
        with self._lock:
            held, self._held = self._held or [], None
        ran = 0
        for run, tensors, seen, owe in held:
            try:
                if versions(tensors) == seen:
                    run()
                    ran += 1
                else:
                    owe()
            except Exception:  # noqa: BLE001 - a check never takes the program down; each says its own failure
                pass
        return ran
