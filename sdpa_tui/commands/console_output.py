"""Standard output for ``report`` and ``sweep``: Rich on a terminal; in a pipe or a file, lines that fit ``COLUMNS``
when it is set (as Rich and ``watch --report``'s text read it), ``PIPED_WIDTH`` when it is not, and no trailing
spaces (Rich pads a table's lines to its width)."""

from __future__ import annotations

import os
import re
from typing import Any

from rich.console import Console, RenderableType

PIPED_WIDTH = 160
"""Piped and no ``COLUMNS``: scripts and logs, where a table reads better unwrapped than at Rich's 80."""

_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)
"""Spaces at a line's end, also where they come before the codes that end a style (``FORCE_COLOR`` in a pipe)."""


def stdout_console() -> Console:
    """The Console for standard output: a terminal's own width; piped, ``COLUMNS`` or else ``PIPED_WIDTH``."""
    console = Console()
    if console.is_terminal or os.environ.get("COLUMNS", "").isdigit():
        return console  # Rich reads COLUMNS itself
    return Console(width=PIPED_WIDTH)


def without_trailing_spaces(text: str) -> str:
    return _TRAILING.sub(r"\1", text)


def print_out(console: Console, renderable: RenderableType | str, **options: Any) -> None:
    """``console.print``, with each line's trailing spaces left out when the console is no terminal."""
    if console.is_terminal:
        console.print(renderable, **options)
        return
    with console.capture() as capture:
        console.print(renderable, **options)
    console.file.write(without_trailing_spaces(capture.get()))
    console.file.flush()
