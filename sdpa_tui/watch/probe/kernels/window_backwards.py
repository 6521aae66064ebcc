"""Whether the backward of the calls in the running profiler window has run: a window holding a training signature's
calls ends only after it has (their backward's kernels are read with the calls, from the same trace).

Autograd runs a step's backward after all of its forward calls, the last layer's first: a hook on the output of a
signature's first call in the window fires when the backward reaches that call, so once it has fired the backward of
every later call of the step has run too, and the next SDPA call (the next step's) may stop the window. Before, a
window ran at least 16 calls (two steps of an 8-layer model, so that one backward was inside; none at all for a
model of more layers) and the schedule's window 64.
"""

from __future__ import annotations

import torch


class WindowBackwards:
    """The running window's training signatures (entry indices) and those whose backward has run since they did."""

    def __init__(self) -> None:
        self._window = 0
        self.awaited: set[int] = set()
        self.ran: set[int] = set()

    def new_window(self) -> None:
        """A window starts: hooks from an earlier one no longer count."""
        self._window += 1
        self.awaited, self.ran = set(), set()

    def expect(self, index: int, out: object) -> None:
        """A call of entry ``index`` ran in the window and gave ``out``: hook its backward, once per window."""
        if index in self.awaited or not isinstance(out, torch.Tensor) or not out.requires_grad:
            return
        self.awaited.add(index)
        window, ran = self._window, self.ran

        def backward_reached(_grad) -> None:  # autograd's thread; returns None: the gradient is left unchanged
            if self._window == window:
                ran.add(index)

        out.register_hook(backward_reached)

    def all_ran(self) -> bool:
        return self.awaited <= self.ran
