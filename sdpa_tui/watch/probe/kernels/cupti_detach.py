"""When a watched process lets Kineto detach CUPTI after a profiler window, and how no window races it.

Kineto leaves CUPTI attached to the process after a trace (pytorch#146604), and every kernel launch
pays for it from then on: a host-bound transformers Llama step ran about 20 % slower for the rest
of the run on the H100 (``docs/lab-notes/watch-truth.md``). With ``TEARDOWN_CUPTI=1`` in the environment when
a trace stops, Kineto detaches it: a thread of its own waits for the next CUDA runtime call and
calls ``cuptiFinalize`` from inside it. A window that starts before that has happened races the
teardown (a short program with windows in quick succession hung on the H100). So:

- the variable is set only for the stop of a window after which none is due for ``DETACH_AFTER_S``
  (the schedule's) and no signature that still wants samples may get one sooner (a short program's coverage
  windows follow each other closely, and never detach; a signature the windows' budget holds back for longer
  does not keep CUPTI attached meanwhile: a training loop's evaluation did, for the rest of a 1-minute run),
  and removed for the stop of any other (``TEARDOWN_CUPTI`` set by the user is
  left as it is, and obeyed: ``1`` detaches after every window, anything else never does);
- at a start it says ``1`` exactly when the last stop detached: Kineto re-attaches the callbacks a teardown removed
  only while it says so (its lazy re-init), and a start that finds it ``1`` with CUPTI still attached begins a
  teardown (the start resets the last trace, and the reset tears CUPTI down): the window then records no GPU work
  at all (in two of seven runs of a transformers Llama on an H200, the window after a follow-up that had kept CUPTI);
- after a stop that detaches, no window starts for ``GUARD_S``, and the probe's background thread
  makes a CUDA runtime call meanwhile (``cudaGetDevice``: no context is created), so the teardown
  finishes even in a program that makes no CUDA call for a while.
"""

from __future__ import annotations

import os
import time

import torch

ENV = "TEARDOWN_CUPTI"
OURS = "SDPA_TUI_TEARDOWN_CUPTI"
"""Set beside ``ENV`` while watch set it: a child process (spawned, or started by the program) inherits both and
knows the value is not the user's."""
DETACH_AFTER_S = 10.0
"""A window's stop detaches CUPTI when the schedule's next window is at least this far away."""
GUARD_S = 0.5
"""After a stop that detached CUPTI, no window starts for this long."""


class CuptiDetach:
    """The environment Kineto reads at a window's start and stop, and the guard after a detaching stop."""

    def __init__(self) -> None:
        ours = os.environ.get(OURS) == "1"
        self.user_value = None if ours else os.environ.get(ENV)  # the user's own choice, obeyed and never changed
        self.detached_at: float | None = None
        self.torn_down = False  # the last stop detached CUPTI: the next start re-attaches it

    def before_start(self) -> None:
        """The variable says ``1`` exactly when the last stop detached CUPTI: Kineto's start re-attaches what a teardown
        removed only then, and tears an attached CUPTI down (in the window it starts) whenever it says ``1``."""
        if self.user_value is None:
            _set(self.torn_down)

    def before_stop(self, next_due_in_s: float | None, final: bool = False, wanted_soon: bool = False) -> bool:
        """Set the variable for this stop; True if Kineto will detach CUPTI after it. ``next_due_in_s``: when the
        schedule's next window is due (None: no schedule yet); ``wanted_soon``: a signature still wants samples and
        may get a window within ``DETACH_AFTER_S``.
        The program's last window never detaches (a teardown thread left waiting at exit)."""
        if self.user_value is not None:
            detach = self.user_value == "1"
        else:
            detach = (not final and not wanted_soon
                      and (next_due_in_s is None or next_due_in_s >= DETACH_AFTER_S))
            _set(detach)
        self.torn_down = detach
        if detach:
            self.detached_at = time.monotonic()
        return detach

    def guarding(self, now: float) -> bool:
        """Is a teardown perhaps still under way (no window may start)?"""
        return self.detached_at is not None and now - self.detached_at < GUARD_S

    def poke(self) -> None:
        """Background thread: a CUDA runtime call, in whose exit Kineto's waiting teardown finalizes CUPTI."""
        if self.guarding(time.monotonic()):
            try:
                torch.cuda.current_device()
            except Exception:  # noqa: BLE001 - a poke that fails leaves the teardown to the program's next call
                pass


def _set(on: bool) -> None:
    if on:
        os.environ[ENV] = os.environ[OURS] = "1"
    else:
        os.environ.pop(ENV, None)
        os.environ.pop(OURS, None)
