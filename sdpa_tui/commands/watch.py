"""``sdpa-tui watch [--report calls.json] [--metrics-port PORT] [-m module] -- prog args``, or ``--attach ADDRESS``
in place of the program: a process that watches itself with the Python API and publishes there."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ..exports.files.atomic import write_text_atomic
from ..exports.files.output_paths import check_output_path
from ..exports.metrics.metrics_address import DEFAULT_ADDRESS
from ..watch.program.attached_processes import AttachedProcesses
from ..watch.program.watched_program import CommandError, WatchedProgram
from ..watch.states.state_socket import DEFAULT_REPRO_DIR
from .exit_codes import EXIT_NONFINITE, EXIT_USAGE

if TYPE_CHECKING:
    from ..core.calls.watch_report import Advisor

# The report's modules (the report, its text, the advice's replay) and the metrics' are imported once the program
# has started, while it starts (run_headless), or only with --metrics-port: watch's start before the program's
# spawn was a tenth of a second of imports (2-core VM), which the program's start waited for.

FORMATS = ("text", "markdown", "json")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sdpa-tui watch",
        description="Run a Python program and show every SDPA call signature it makes: the backend SDPA chose, "
        "why not the others, counts, time and kernels. With --report or --format: no UI; the report on stdout once "
        "the program has ended (and with --report the JSON in a file).",
        usage="sdpa-tui watch [--report calls.json] [--format text|markdown|json] [--metrics-port PORT] "
              "[-m module | -- python script.py | --attach ADDRESS] [args ...]",
    )
    parser.add_argument("--report", metavar="PATH", help="headless: run the program, print the call table, write JSON")
    parser.add_argument("--format", choices=FORMATS, help="headless: print the report on stdout in this format once "
                        "the program has ended (default text, to the terminal's width); with json the program's "
                        "own stdout goes to stderr, so that stdout is the JSON alone")
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module, like python -m")
    parser.add_argument("--attach", metavar="ADDRESS",
                        help="run nothing: listen at ADDRESS (a socket's path, or HOST:PORT) for a process that "
                        "watches itself with the Python API, watch(publish=ADDRESS), and show its calls; headless, "
                        "the report comes once its block has ended")
    parser.add_argument("--metrics-port", type=int, metavar="PORT",
                        help="serve the job's per-signature metrics for Prometheus on /metrics (0: any free port)")
    parser.add_argument("--metrics-address", default=DEFAULT_ADDRESS, metavar="ADDR",
                        help=f"address the metrics listen on (default {DEFAULT_ADDRESS}: this machine only)")
    parser.add_argument("--no-advice", action="store_true",
                        help="with --report or --format: do not measure each signature's alternatives after the "
                        "program exits")
    parser.add_argument("--advice-budget", type=_seconds, metavar="SECONDS",
                        help="how long the alternatives may be measured after the program exits (default: 10 s, or "
                        "a quarter of the program's run where that is longer); a measurement under way when it runs "
                        "out may take half as long again to finish")
    parser.add_argument("--no-flex", action="store_true",
                        help="leave FlexAttention out of the alternatives (it compiles for seconds per shape)")
    parser.add_argument("--repro-dir", metavar="DIR",
                        help="where a call whose gradients are non-finite or out of tolerance is saved as a folder "
                        f"to replay and file (default: beside the report, else ./{DEFAULT_REPRO_DIR})")
    parser.add_argument("--fail-on-nonfinite", action="store_true",
                        help=f"with --report: exit {EXIT_NONFINITE} when the program exited 0 but an SDPA output or "
                        "gradient held NaN or Inf (for CI; a program that failed keeps its own exit code)")
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
    if args.fail_on_nonfinite and not args.report:
        parser.exit(EXIT_USAGE, "sdpa-tui watch: error: --fail-on-nonfinite goes with --report PATH\n")
    repro_dir = args.repro_dir or (str(Path(args.report).with_suffix("")) + ".repro" if args.report else DEFAULT_REPRO_DIR)
    headless = args.report is not None or args.format is not None
    watched: WatchedProgram | AttachedProcesses
    try:
        if args.attach is not None:
            if program or args.module:
                raise CommandError("--attach runs nothing: give no program with it")
            watched = AttachedProcesses(args.attach)
        else:
            watched = WatchedProgram(program, module=args.module,
                                     stdout=sys.stderr if args.format == "json" else None, repro_dir=repro_dir)
    except (CommandError, ValueError) as exc:
        parser.exit(EXIT_USAGE, f"sdpa-tui watch: error: {exc}\n")
    if args.report:
        try:  # before the program runs: a report that cannot be written must not cost a run
            check_output_path("--report", args.report)
        except ValueError as exc:
            parser.exit(EXIT_USAGE, f"sdpa-tui watch: error: {exc}\n")
    elif not headless and run_ui is None:
        parser.exit(EXIT_USAGE, "sdpa-tui watch: error: no live monitor here; use --report PATH\n")
    if isinstance(watched, AttachedProcesses):
        try:  # before the UI starts: an address in use is bad input
            watched.start()
        except OSError as exc:
            parser.exit(EXIT_USAGE, f"sdpa-tui watch: error: cannot listen at {args.attach}: {exc.strerror or exc}\n")
    missing = watched.unopenable_script()
    if missing:  # python's own line and its exit code, as if the program had run
        print(missing, file=sys.stderr)
        return EXIT_USAGE
    publisher = None
    if args.metrics_port is not None:
        from ..exports.metrics.metrics_server import MetricsServerError
        from ..watch.program.metrics_publisher import MetricsPublisher

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
        if headless:
            return run_headless(watched, args.report, None if args.no_advice else advisor, args.format or "text",
                                args.fail_on_nonfinite)
        return run_ui(watched, None if args.no_advice else advisor)
    finally:
        if publisher is not None:
            publisher.stop()


def run_headless(watched: WatchedProgram | AttachedProcesses, report_path: str | None, advisor: Advisor | None = None,
                 output: str = "text", fail_on_nonfinite: bool = False) -> int:
    """Run the program, measure the advice, print the report in ``output``'s format, write the JSON file."""
    watched.start()
    from rich.console import Console  # imported while the program starts

    from ..core.calls import watch_report  # noqa: F401 - the report the program's states are read into
    from ..watch.advice.replay_client import replay_flagged
    from ..watch.report.gradient_text import nonfinite_found
    from ..watch.report.report_text import report_markdown, report_text

    try:
        code = watched.wait()
    finally:
        watched.close()
    report = watched.report(code)
    replay_flagged(report, lambda text: print(text, file=sys.stderr, flush=True))
    if advisor is not None and report.rows:
        advisor(report)
    document = report.to_json()
    if output == "json":
        text = document
    elif output == "markdown":
        text = report_markdown(report)
    else:
        width = Console().width
        text = report_text(report, width)
        if report.error:
            text += "\nthe program raised:\n" + "".join(
                line + "\n" for raw in report.error.rstrip().splitlines() for line in split_long(raw, width))
    sys.stdout.write(text)
    sys.stdout.flush()
    if report_path is None:
        return code if code >= 0 else 128 - code
    try:
        write_text_atomic(report_path, document)
    except OSError as exc:  # its strerror: the exception names the temporary file, not the report
        print(f"sdpa-tui watch: error: could not write {report_path}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {report_path}", file=sys.stdout if output == "text" else sys.stderr)
    code = code if code >= 0 else 128 - code
    found = nonfinite_found(report) if fail_on_nonfinite and code == 0 else []
    for line in found:
        print(f"sdpa-tui watch: non-finite: {line}", file=sys.stderr)
    return EXIT_NONFINITE if found else code


def split_long(line: str, width: int) -> list[str]:
    """A traceback's line in pieces of ``width`` (its words as written: no rewrapping of code)."""
    return [line[i:i + width] for i in range(0, len(line), width)] or [""]
