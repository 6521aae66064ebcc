"""The alternatives' measuring, said on stderr while it runs: one line redrawn in place on a terminal, else one line
per step (signature and what is measured there), so that a log holds each step once; either within the terminal's
width (``COLUMNS`` on a pipe, else 80), cut on a terminal, wrapped on a pipe."""

from __future__ import annotations

import shutil
import sys
import textwrap
import time
from typing import TextIO

from ...core.calls.advice import AdviceProgress

REDRAW_EVERY_S = 0.25
PREFIX = "sdpa-tui watch: "
INDENT = "    "


def fitted(text: str) -> str:
    """``text`` wrapped to the terminal's width, its lines after the first indented."""
    return "\n".join(textwrap.wrap(text, shutil.get_terminal_size().columns, subsequent_indent=INDENT,
                                   break_on_hyphens=False)) or text


class StderrProgress:
    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self._step: tuple[int, str] | None = None
        self._drawn_at: float | None = None  # a terminal line is on screen, drawn then

    def __call__(self, progress: AdviceProgress) -> None:
        now = time.monotonic()
        new_step = progress.step != self._step
        self._step = progress.step
        if not self.tty:
            if new_step:
                self.stream.write(fitted(PREFIX + progress.line()) + "\n")
                self.stream.flush()
            return
        if new_step or self._drawn_at is None or now - self._drawn_at >= REDRAW_EVERY_S:
            width = shutil.get_terminal_size().columns - 1  # a line that wrapped could not be redrawn in place
            line = PREFIX + progress.line()
            self.stream.write("\r\x1b[K" + (line if len(line) <= width else line[:width - 1] + "…"))
            self.stream.flush()
            self._drawn_at = now

    def say(self, text: str) -> None:
        """A line of its own, above the progress line (which the next step draws again)."""
        self.clear()
        self.stream.write(fitted(text) + "\n")
        self.stream.flush()

    def clear(self) -> None:
        if self._drawn_at is not None:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn_at = None
