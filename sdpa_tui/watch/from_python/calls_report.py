"""``w.report``: what a ``with watch():`` block saw, as ``sdpa-tui watch --report`` has it.

``calls``: one row per signature (``core/calls/watch_report.py``'s :class:`CallRow`: its ``site``, ``backend``,
``count``, ``kernel_us`` or ``host_us``, ``check``, ``backward``...); ``table()`` a Rich renderable of the command's
table (``watch/report/report_text.py``'s columns); ``str()`` the command's text report; ``to_json(path)`` the command's
JSON file, which ``sdpa-tui compare`` and the exporter read; ``advice()`` the command's advice (``watch/advice/advise.py``),
measured with its budget. In Jupyter the report and its table display themselves (``_repr_mimebundle_``).
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from ...core.calls.watch_report import CallRow, WatchReport
from ...engine.host.spawned_main import spawning_past_the_main_module
from ...exports.files.atomic import write_text_atomic
from ..advice.advise import measure_advice
from ..report.call_cells import footnotes
from ..report.report_text import clock_line, columns, legend, report_text, summary_line

NOTEBOOK_WIDTH = 120
"""The columns a report is drawn to in a notebook (no terminal to ask)."""


class ShownInNotebooks:
    """Rich's ``__rich__`` (a console prints it) and Jupyter's ``_repr_mimebundle_`` (a cell shows it: HTML of the
    same renderable, and its text)."""

    def __rich__(self) -> RenderableType:
        raise NotImplementedError

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        console = Console(record=True, file=io.StringIO(), width=NOTEBOOK_WIDTH, force_terminal=True,
                          color_system="truecolor")
        console.print(self)
        return {"text/plain": console.export_text(clear=False), "text/html": console.export_html(inline_styles=True)}


class CallsTable(ShownInNotebooks):
    """The command's table of a report: one line per signature."""

    def __init__(self, report: WatchReport) -> None:
        self.report = report

    def __rich__(self) -> Table:
        report = self.report
        table = Table(title=f"SDPA calls of {' '.join(report.program)}", caption=summary_line(report),
                      title_justify="left", caption_justify="left")
        cols = columns(report)
        for c in cols:
            table.add_column(c.heading, justify="right" if c.right else "left", overflow="fold",
                             no_wrap=c.heading != "call")
        for i, row in enumerate(report.rows):
            table.add_row(*(c.cell(i, row) for c in cols))
        return table


class CallsReport(ShownInNotebooks):
    def __init__(self, report: WatchReport) -> None:
        self.watch_report = report

    @property
    def calls(self) -> list[CallRow]:
        return self.watch_report.rows

    def table(self) -> CallsTable:
        return CallsTable(self.watch_report)

    def to_dict(self) -> dict[str, Any]:
        return self.watch_report.to_dict()

    def to_json(self, path: str | os.PathLike[str]) -> str:
        """Write ``watch --report``'s JSON to ``path`` (atomically, as the command does); the path written."""
        write_text_atomic(os.fspath(path), self.watch_report.to_json())
        return os.fspath(path)

    def advice(self, budget_s: float | None = None, flex: bool = True,
               say: Callable[[str], None] | None = None) -> CallsReport:
        """Measure each signature's alternatives in the lab's engine, as ``sdpa-tui watch`` does after the program
        exits (``budget_s``: its ``--advice-budget``, default its own; ``flex``: FlexAttention too; ``say``: its
        messages, else stderr); the report, now with the advice in its table, text and JSON."""
        if self.calls:
            with spawning_past_the_main_module():
                measure_advice(self.watch_report, say, flex, None, budget_s)
        return self

    def __rich__(self) -> Group:
        report = self.watch_report
        parts: list[RenderableType] = [self.table()]
        under = [line for line in (clock_line(report) if report.rows else "", legend(report)) if line]
        under += footnotes(report)
        if report.advice_note:
            under.append(report.advice_note)
        parts += [Text(line) for line in under]
        return Group(*parts)

    def __str__(self) -> str:
        return report_text(self.watch_report, NOTEBOOK_WIDTH)
