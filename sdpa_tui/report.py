"""``sdpa-tui report``: measure headless, print the comparison table, optionally write JSON/Markdown."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from .core.backends import Backend
from .core.workload import Workload
from .engine.headless import EngineFailed, Progress, measure
from .exports.atomic import write_text_atomic
from .exports.comparison import report_dict
from .exports.tables import markdown_report, rich_report

EXIT_ENGINE = 1


def run_report(args: argparse.Namespace, workload: Workload, backends: tuple[Backend, ...]) -> int:
    out = Console()
    if not out.is_terminal:
        out = Console(width=160)  # scripts and logs: no wrapping of the table
    err = Console(stderr=True)
    with err.status("starting the engine", spinner="dots") as status:

        def progress(p: Progress) -> None:
            status.update(f"{p.text} · {p.done_backends}/{p.total_backends} backends done · {p.elapsed_s:.0f} s")

        try:
            session = measure(workload, backends, args.device, duration_s=args.duration, on_progress=progress,
                              legacy_api=args.legacy_api, priority=args.priority)
        except EngineFailed as exc:
            err.print(f"[bold red]sdpa-tui: the engine failed:[/] {exc}")
            return EXIT_ENGINE
    out.print(rich_report(session, out.width))
    try:
        if args.json:
            write_text_atomic(args.json, json.dumps(report_dict(session), indent=2) + "\n")
            err.print(f"wrote {args.json}")
        if args.markdown:
            write_text_atomic(args.markdown, markdown_report(session))
            err.print(f"wrote {args.markdown}")
    except OSError as exc:
        err.print(f"[bold red]sdpa-tui: could not write {exc.filename}:[/] {exc.strerror}")
        return EXIT_ENGINE
    return 0
