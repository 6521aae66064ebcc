"""A table as plain lines that fit a terminal's width: one column's words wrap onto further lines, one other column
may be cut from its left (a file name before its line number), and no other cell is ever cut or wrapped, so a number
reads whole; and a paragraph wrapped under an indent. Used by ``watch --report``'s text and ``compare``'s of two
watch reports."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

GAP = "  "
MIN_WRAP_WIDTH = 16
"""The wrapping column never gets narrower than this (a narrower terminal gets longer lines, never cut numbers)."""
MIN_CUT_WIDTH = 10
CUT = "…"


def fitted_rows(headings: Sequence[str], rows: Sequence[Sequence[str]], width: int, wrap: int,
                right: Sequence[bool] = (), cut: int | None = None) -> tuple[str, list[list[str]]]:
    """The heading's line and each row's lines (more than one where column ``wrap``'s words wrap), each no wider
    than ``width`` where the columns other than ``wrap`` and ``cut`` leave room: ``wrap`` takes the width the others
    leave, down to ``MIN_WRAP_WIDTH``; then ``cut``, if given, loses characters from its left, down to
    ``MIN_CUT_WIDTH``. ``right``: the columns set flush right (numbers)."""
    right = [*right, *[False] * (len(headings) - len(right))]
    widths = [max([len(h), *(len(r[j]) for r in rows)]) for j, h in enumerate(headings)]
    over = sum(widths) + len(GAP) * (len(headings) - 1) - width
    if over > 0:
        wrapped_width = max(MIN_WRAP_WIDTH, widths[wrap] - over)
        over -= widths[wrap] - wrapped_width
        widths[wrap] = wrapped_width
    if over > 0 and cut is not None:
        widths[cut] = max(MIN_CUT_WIDTH, len(headings[cut]), widths[cut] - over)

    def fit(j: int, value: str) -> str:
        return value if j != cut or len(value) <= widths[j] else CUT + value[len(value) - widths[j] + 1:]

    def line(values: Sequence[str]) -> str:
        parts = [fit(j, v).rjust(w) if right[j] else fit(j, v).ljust(w) for j, (v, w) in enumerate(zip(values, widths))]
        return GAP.join(parts).rstrip()

    lines = []
    for values in rows:
        words = textwrap.wrap(values[wrap], widths[wrap], break_on_hyphens=False) or [""]
        lines.append([line([*values[:wrap], words[0], *values[wrap + 1:]]),
                      *(line(["" if j != wrap else more for j in range(len(headings))]) for more in words[1:])])
    return line(headings), lines


def fitted_lines(headings: Sequence[str], rows: Sequence[Sequence[str]], width: int, wrap: int,
                 right: Sequence[bool] = (), cut: int | None = None) -> list[str]:
    """``fitted_rows``'s lines in one list, the heading first."""
    heading, lines = fitted_rows(headings, rows, width, wrap, right, cut)
    return [heading, *(text for row in lines for text in row)]


def wrapped(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` in lines of at most ``width`` (its own line breaks kept), continued under ``indent``."""
    lines = []
    for part in text.split("\n"):
        lead = part[: len(part) - len(part.lstrip(" "))]
        lines += textwrap.wrap(part, width, subsequent_indent=max(lead, indent, key=len), break_on_hyphens=False,
                               drop_whitespace=True, initial_indent="") or [""]
    return lines
