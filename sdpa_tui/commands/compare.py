"""``sdpa-tui compare A B``: two reports or snapshots side by side, or two ``watch --report`` files (per call site:
backend, time per call, advice); exit 1 when B got slower.

Exit codes: 0 nothing slower than ``--threshold``; 1 a clock of some backend got slower; 2 a file
that is not a report, a missing file, or a bad threshold (one line on stderr); 3 not comparable: A and B measured
different workloads (one line on stderr, "not comparable: ...", nothing on stdout).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from ..exports.compare.report_diff import DEFAULT_THRESHOLD, ReportFileError, compare_reports, load_report
from .exit_codes import EXIT_NOT_COMPARABLE, EXIT_SLOWER, EXIT_USAGE

# The CLI imports this module to build its parser at every start (the live monitor's too): what only a comparison
# needs (the watch report model, its diff, Rich) is imported when one runs.


def add_compare_parser(sub: argparse._SubParsersAction) -> None:
    compare = sub.add_parser(
        "compare", help="compare two reports, snapshots or watch reports (another GPU, torch, day, the advice "
        "applied); exit 1 when B is slower",
        description="Compare two `sdpa-tui report --json` files or snapshot.json files (or snapshot "
        "directories): per backend, main kernel changed or not, the three clocks as ratios B/A, eligibility "
        "and SDPA's pick. Or two `sdpa-tui watch --report` files: per call site, the backend, the time per call "
        "and the advice in A and in B. Exit 1 when a clock of B is slower than A by more than the threshold, 3 when A "
        "and B measured different workloads (not comparable).",
    )
    compare.add_argument("a", metavar="A", help="the reference report (e.g. before a torch upgrade)")
    compare.add_argument("b", metavar="B", help="the report compared against A")
    compare.add_argument(
        "--threshold", default=f"{DEFAULT_THRESHOLD * 100:g}%", metavar="PCT",
        help=f"a clock is slower when B/A exceeds 1 + PCT percent (default {DEFAULT_THRESHOLD * 100:g}%%)",
    )
    out = compare.add_mutually_exclusive_group()
    out.add_argument("--markdown", action="store_true", help="print Markdown instead of the table")
    out.add_argument("--json", action="store_true", help="print JSON instead of the table")


def parse_threshold(text: str) -> float:
    """'10', '10%' or '2.5 %' -> 0.10, 0.10, 0.025. Raises ValueError with the reason."""
    try:
        pct = float(text.strip().removesuffix("%"))
    except ValueError:
        raise ValueError(f"--threshold must be a percentage such as 10 or 10%, got {text!r}") from None
    if not math.isfinite(pct) or pct < 0:
        raise ValueError(f"--threshold must be 0 % or more, got {text!r}")
    return pct / 100


def load_either(path: str) -> tuple[dict, bool]:
    """A lab report or snapshot (checked by ``load_report``), or a ``watch --report`` file: (document, is_watch)."""
    from ..core.calls.watch_report import SCHEMA_VERSION as WATCH_SCHEMA_VERSION
    from ..exports.compare.watch_diff import is_watch_report
    from ..exports.files.document_files import UnreadableDocument, read_document

    try:
        file, document = read_document(path)
    except UnreadableDocument as exc:
        raise ReportFileError(str(exc)) from None
    if not is_watch_report(document):
        return load_report(path), False
    if document.get("schema_version") != WATCH_SCHEMA_VERSION:
        raise ReportFileError(f"{file} is a watch report of schema version {document.get('schema_version')!r}; "
                              f"this sdpa-tui compares version {WATCH_SCHEMA_VERSION}")
    return document, True


def run_compare(args: argparse.Namespace) -> int:
    try:
        threshold = parse_threshold(args.threshold)
        (a, a_watch), (b, b_watch) = load_either(args.a), load_either(args.b)
        if a_watch != b_watch:
            watch, lab = (args.a, args.b) if a_watch else (args.b, args.a)
            raise ReportFileError(f"{watch} is a watch report and {lab} is not: compare two of a kind")
    except (ValueError, ReportFileError) as exc:
        print(f"sdpa-tui compare: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from rich.console import Console

    if a_watch:
        from ..exports.compare import watch_diff as views

        comparison = views.compare_watch_reports(a, b, threshold, a_path=args.a, b_path=args.b)
        why_not = comparison.not_comparable
        as_dict, as_markdown, as_rich = (views.watch_comparison_dict, views.watch_comparison_markdown,
                                         views.watch_comparison_rich)
    else:
        from ..exports.compare.report_diff_views import comparison_dict, comparison_markdown, comparison_rich

        comparison = compare_reports(a, b, threshold, a_path=args.a, b_path=args.b)
        why_not = "" if comparison.workload_same else \
            f"{args.a} measured {comparison.a.workload}, {args.b} measured {comparison.b.workload}"
        as_dict, as_markdown, as_rich = comparison_dict, comparison_markdown, comparison_rich
    if why_not:  # a ratio of two workloads is no verdict: a CI gate must not read it as a regression
        print(f"sdpa-tui compare: not comparable: {why_not}", file=sys.stderr)
        return EXIT_NOT_COMPARABLE
    if args.json:
        sys.stdout.write(json.dumps(as_dict(comparison), indent=2) + "\n")
    elif args.markdown:
        sys.stdout.write(as_markdown(comparison))
    else:
        out = Console()
        if not out.is_terminal:
            out = Console(width=200)  # scripts and logs: no wrapping
        out.print(as_rich(comparison))
    return EXIT_SLOWER if comparison.regressed else 0
