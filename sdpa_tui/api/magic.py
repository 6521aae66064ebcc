"""``%load_ext sdpa_tui`` then ``%%sdpa_watch`` over a cell: the cell runs in a ``with watch():`` block, and its
report's table (and, unless ``--no-advice``, the advice measured after it) is displayed under it.

``%%sdpa_watch [--no-advice] [--advice-budget SECONDS] [--no-flex] [--report PATH] [--publish ADDRESS]``: the
options of ``sdpa-tui watch`` that mean something for a cell. The report is kept in the user's namespace as
``sdpa_report`` (``sdpa_report.to_json(path)``, ``sdpa_report.calls``).
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from ..watch.from_python.watching import Watch

REPORT_NAME = "sdpa_report"


def magic_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="%%sdpa_watch", add_help=False)
    parser.add_argument("--no-advice", action="store_true", help="do not measure the alternatives after the cell")
    parser.add_argument("--advice-budget", type=float, metavar="SECONDS", help="how long the advice may measure")
    parser.add_argument("--no-flex", action="store_true", help="leave FlexAttention out of the alternatives")
    parser.add_argument("--report", metavar="PATH", help="also write the report's JSON (watch --report's) there")
    parser.add_argument("--publish", metavar="ADDRESS", help="show the cell live in sdpa-tui watch --attach ADDRESS")
    return parser


def register(ipython: Any) -> None:
    cell_count = [0]

    def sdpa_watch(line: str, cell: str) -> None:
        from IPython.display import display

        try:
            args = magic_parser().parse_args(shlex.split(line))
        except SystemExit:  # argparse said what is wrong on stderr
            return
        cell_count[0] += 1
        block = Watch(args.publish, name=f"%%sdpa_watch cell {cell_count[0]}")
        with block:
            result = ipython.run_cell(cell)
        report = block.report
        ipython.user_ns[REPORT_NAME] = report
        if not result.success:
            return  # IPython showed the traceback; the report is kept
        if not args.no_advice:
            report.advice(args.advice_budget, flex=not args.no_flex)
        display(report)
        if args.report:
            report.to_json(args.report)

    ipython.register_magic_function(sdpa_watch, magic_kind="cell", magic_name="sdpa_watch")
