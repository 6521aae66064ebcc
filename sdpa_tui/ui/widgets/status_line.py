"""The status line: the last thing a key or the engine said, its time before it."""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import Static

ROWS = 2  # what the screen gives it (app.tcss: max-height)


class StatusLine(Static):
    """At most two rows; a longer message is cut with … at the end of the second (its start says what happened),
    the whole of it in the tooltip and in ``message``."""

    message = ""
    _line = ""

    def say(self, text: str, error: bool = False) -> None:
        self.message = text
        self._line = f"{time.strftime('%H:%M:%S')}  {text}"
        self.set_class(error, "-error")
        self.tooltip = text
        self.refresh(layout=True)

    def render(self) -> Text:
        line = Text(self._line)  # not markup: a message holds shapes like [2, 8, 512, 64]
        width = self.content_size.width or max(self.app.size.width - 2, 1)
        rows = line.wrap(self.app.console, width)
        if len(rows) <= ROWS:
            return line
        rest = [row.copy() for row in rows[ROWS - 1:]]
        for row in rest:
            row.rstrip()  # the space a row was broken at
        last = Text(" ").join(rest)
        last.truncate(width, overflow="ellipsis")
        return Text("\n").join([*rows[: ROWS - 1], last])
