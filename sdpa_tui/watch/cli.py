"""``sdpa-tui watch [--report calls.json] [--metrics-port PORT] [-m module] -- prog args``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from functools import partial

from ..core.watch_report import Advisor
from ..exit_codes import EXIT_USAGE
from ..exports.atomic import write_text_atomic
from ..exports.metrics_address import DEFAULT_ADDRESS
from ..exports.metrics_server import MetricsServerError
from ..exports.output_paths import check_output_path
from .metrics_publisher import MetricsPublisher
from .runner import CommandError, WatchedProgram


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sdpa-tui watch",
        description="Run a Python program and show every SDPA call signature it makes: the backend SDPA chose, "
        "why not the others, counts, time and kernels. With --report: no UI, a table and a JSON file.",
        usage="sdpa-tui watch [--report calls.json] [--metrics-port PORT] [-m module | -- python script.py] [args ...]",
    )
    parser.add_argument("--report", metavar="PATH", help="headless: run the program, print the call table, write JSON")
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module, like python -m")
    parser.add_argument("--metrics-port", type=int, metavar="PORT",
                        help="serve the job's per-signature metrics for Prometheus on /metrics (0: any free port)")
    parser.add_argument("--metrics-address", default=DEFAULT_ADDRESS, metavar="ADDR",
                        help=f"address the metrics listen on (default {DEFAULT_ADDRESS}: this machine only)")
    parser.add_argument("--no-advice", action="store_true",
                        help="with --report: do not measure each signature's alternatives after the program exits")
    parser.add_argument("--advice-budget", type=_seconds, metavar="SECONDS",
                        help="how long the alternatives may be measured after the program exits (default: 10 s, or "
                        "a quarter of the program's run where that is longer); a measurement under way when it runs "
                        "out may take half as long again to finish")
    parser.add_argument("--no-flex", action="store_true",
                        help="leave FlexAttention out of the alternatives (it compiles for seconds per shape)")
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def split_argv(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Options before ``--`` (or before -m's module) are watch's; the rest is the program's."""
    argv = list(argv)
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1:]
    for i, arg in enumerate(argv):
        if arg == "-m" and i + 1 < len(argv):
            return argv[: i + 2], argv[i + 2:]
    return argv, []


def main(argv: Sequence[str], run_ui=None, advisor: Advisor | None = None) -> int:
    """``run_ui(watched, advisor) -> exit code``: the live monitor (given by the top-level CLI, above this layer)."""
    own, program = split_argv(argv)
    parser = build_parser()
    args = parser.parse_args(own)
    try:
        watched = WatchedProgram(program, module=args.module)
    except CommandError as exc:
        parser.exit(EXIT_USAGE, f"sdpa-tui watch: error: {exc}\n")
    if args.report:
        try:  # before the program runs: a report that cannot be written must not cost a run
            check_output_path("--report", args.report)
        except ValueError as exc:
            parser.exit(EXIT_USAGE, f"sdpa-tui watch: error: {exc}\n")
    elif run_ui is None:
        parser.exit(EXIT_USAGE, "sdpa-tui watch: error: no live monitor here; use --report PATH\n")
    publisher = None
    if args.metrics_port is not None:
        try:  # before the program runs, as the report's path
            publisher = MetricsPublisher.start(watched, args.metrics_port, args.metrics_address)
        except (ValueError, MetricsServerError) as exc:
            parser.exit(EXIT_USAGE, f"sdpa-tui watch: error: {exc}\n")
        print(f"sdpa-tui watch: metrics on {publisher.url}", file=sys.stderr)
    if advisor is not None and args.no_flex:
        advisor = partial(advisor, flex=False)
    if advisor is not None and args.advice_budget is not None:
        advisor = partial(advisor, budget_s=args.advice_budget)
    try:
        if args.report:
            return run_headless(watched, args.report, None if args.no_advice else advisor)
        return run_ui(watched, None if args.no_advice else advisor)
    finally:
        if publisher is not None:
            publisher.stop()


def run_headless(watched: WatchedProgram, report_path: str, advisor: Advisor | None = None) -> int:
    from rich.console import Console
    from rich.text import Text

    from ..core.compiled_twins import cost_lines
    from .tables import calls_table, compiled_lines, footnotes, why_not_lines

    watched.start()
    try:
        code = watched.wait()
    finally:
        watched.close()
    report = watched.report(code)
    if advisor is not None and report.rows:
        advisor(report)
    console = Console(stderr=False)

    def say(line: str) -> None:  # torch's words, code and tracebacks hold brackets Rich would take for markup
        console.print(line, markup=False)

    console.print(calls_table(report))
    for i, row in enumerate(report.rows):
        console.print(Text.assemble((row.signature.describe(), "bold"),
                                    f" at {row.site}: chose {row.backend or 'none'}"))
        for line in why_not_lines(row):
            say(f"  why not {line}")
        for line in compiled_lines(row):
            say(f"  {line}")
        advice = report.advice[i] if i < len(report.advice) else None
        if advice is not None and advice.compiled_cost is not None:
            for line in cost_lines(advice.compiled_cost):
                say(f"  {line}")
    for line in footnotes(report):
        say(line)
    if report.error:
        console.print("[red]the program raised:[/]")
        console.print(report.error.rstrip(), markup=False, highlight=False)
    try:
        write_text_atomic(report_path, json.dumps(report.to_dict(), indent=2) + "\n")
    except OSError as exc:  # its strerror: the exception names the temporary file, not the report
        print(f"sdpa-tui watch: error: could not write {report_path}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    console.print(f"wrote {report_path}")
    return code if code >= 0 else 128 - code
