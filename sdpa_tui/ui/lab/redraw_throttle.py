"""At most one redraw per interval for a stream of changes (the engine sends many records a second; drawing the
panels was most of the UI process's CPU time)."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App
from textual.timer import Timer


class RedrawThrottle:
    """``request()`` runs ``redraw`` ``interval_s`` later, once for every request made meanwhile; ``now()`` runs it
    at once and once more ``interval_s`` later (the layout may settle in between). No timer runs while nothing
    changes."""

    def __init__(self, app: App, interval_s: float, redraw: Callable[[], None]) -> None:
        self.app = app
        self.interval_s = interval_s
        self.redraw = redraw
        self._timer: Timer | None = None

    @property
    def pending(self) -> bool:
        """A redraw is due: something changed since the last one."""
        return self._timer is not None

    def request(self) -> None:
        if self._timer is None:
            self._timer = self.app.set_timer(self.interval_s, self.fire, name="redraw")

    def now(self) -> None:
        self.redraw()
        self.request()

    def fire(self) -> None:
        """What the timer runs: the redraw that was due."""
        self._timer = None
        self.redraw()
