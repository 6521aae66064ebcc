"""The only Textual internals sdpa-tui touches, each where Textual has no public way (checked on Textual 8.2):

- a driver's output stream (``Driver._file``): the live app's driver writes through a stream that survives a dead
  terminal (:mod:`.guarded_driver`); Textual has no public way to give a driver another output stream;
- the screen as the terminal shows it (``Screen._compositor``): ``App.export_screenshot`` draws from it, but only
  as SVG; the tests read the screen's cells as text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.driver import Driver
from textual.screen import Screen
from textual.strip import Strip


def wrap_driver_output(driver: Driver, wrap: Callable[[Any], Any]) -> None:
    """Make ``driver`` write the screen through ``wrap(its stream)``: call from the driver's ``__init__``."""
    driver._file = wrap(driver._file)  # type: ignore[attr-defined]


def screen_strips(screen: Screen) -> list[Strip]:
    """The screen as the terminal shows it now: one :class:`Strip` per row."""
    return screen._compositor.render_strips()
