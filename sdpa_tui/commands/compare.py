"""``sdpa-tui compare A B``: two reports or snapshots side by side; exit 1 when B got slower.

Exit codes: 0 nothing slower than ``--threshold``; 1 a clock of some backend got slower; 2 a file
that is not a report, a missing file, or a bad threshold (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from ..exit_codes import EXIT_SLOWER, EXIT_USAGE
from ..exports.report_diff import DEFAULT_THRESHOLD, ReportFileError, compare_reports, load_report


def add_compare_parser(sub: argparse._SubParsersAction) -> None:
    compare = sub.add_parser(
        "compare", help="compare two reports or snapshots (another GPU, torch, day); exit 1 when B is slower",
        description="Compare two `sdpa-tui report --json` files or snapshot.json files (or snapshot "
        "directories): per backend, main kernel changed or not, the three clocks as ratios B/A, eligibility "
        "and SDPA's pick. Exit 1 when a clock of B is slower than A by more than the threshold.",
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


def run_compare(args: argparse.Namespace) -> int:
    try:
        threshold = parse_threshold(args.threshold)
        a, b = load_report(args.a), load_report(args.b)
    except (ValueError, ReportFileError) as exc:
        print(f"sdpa-tui compare: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from rich.console import Console  # here: the CLI imports this module to build its parser

    from ..exports.report_diff_views import comparison_dict, comparison_markdown, comparison_rich

    comparison = compare_reports(a, b, threshold, a_path=args.a, b_path=args.b)
    if args.json:
        sys.stdout.write(json.dumps(comparison_dict(comparison), indent=2) + "\n")
    elif args.markdown:
        sys.stdout.write(comparison_markdown(comparison))
    else:
        out = Console()
        if not out.is_terminal:
            out = Console(width=200)  # scripts and logs: no wrapping
        out.print(comparison_rich(comparison))
    return EXIT_SLOWER if comparison.regressed else 0
