"""``sdpa-tui report``: measure headless, print the comparison table, optionally write JSON/Markdown."""

from __future__ import annotations

import argparse
import json

from rich.console import Console

from ..core.backends import Backend
from ..core.calls.packed_alternative import lab_spec
from ..core.calls.packed_alternative import refusal as packed_refusal
from ..core.lab.session import Session
from ..core.workload import Workload
from ..engine.host.headless import EngineFailed, Progress, measure
from ..engine.host.packed_cost_client import measure_packed
from ..exports.files.atomic import write_text_atomic
from ..exports.lab.packed_rows import PackedRow, packed_rows
from ..exports.lab.report_data import STATUS_TEXT, report_dict
from ..exports.lab.report_tables import markdown_report, rich_report
from .console_output import print_out, stdout_console
from .exit_codes import EXIT_ENGINE, EXIT_INTERRUPTED, EXIT_NOTHING_MEASURED

PACKED_TIMEOUT_S = 120.0
TIMEOUT_S = 300.0
"""When this is up (engine start included), the report shows what it has, marked as few samples; it fails only
with no number at all."""


def run_report(args: argparse.Namespace, workload: Workload, backends: tuple[Backend, ...]) -> int:
    out = stdout_console()
    err = Console(stderr=True)
    with err.status("starting the engine", spinner="dots") as status:

        def progress(p: Progress) -> None:
            status.update(f"{p.text} · {p.done_backends}/{p.total_backends} backends done · {p.elapsed_s:.0f} s")

        try:
            session = measure(workload, backends, args.device, duration_s=args.duration, on_progress=progress,
                              timeout_s=TIMEOUT_S, legacy_api=args.legacy_api, priority=args.priority)
        except EngineFailed as exc:
            err.print(f"[bold red]sdpa-tui: the engine failed:[/] {exc}")
            return EXIT_ENGINE
        except KeyboardInterrupt:  # the engine is stopped by measure(); one line, as sweep says it
            status.stop()
            err.print("[bold red]sdpa-tui:[/] interrupted; nothing is reported")
            return EXIT_INTERRUPTED
    packed, unpacked = packed_alternatives(workload, args.device, err)
    print_out(out, rich_report(session, out.width, packed))
    if unpacked:
        print_out(out, unpacked, highlight=False)
    if session.incomplete:
        print_out(out, f"[bold yellow]{session.incomplete}[/]", highlight=False)
    for path, text in ((args.json, lambda: json.dumps(report_dict(session, packed), indent=2) + "\n"),
                       (args.markdown, lambda: markdown_report(session, packed))):
        if not path:
            continue
        try:
            write_text_atomic(path, text())
        except OSError as exc:  # the user's path, not the temporary file's; one line
            err.print(f"[bold red]sdpa-tui: could not write {path}:[/] {exc.strerror or exc}",
                      soft_wrap=True, highlight=False)
            return EXIT_ENGINE
        err.print(f"wrote {path}")
    nothing = nothing_measured(session)
    if nothing:  # after the table and the files, which say why each backend did not run
        err.print(f"[bold red]sdpa-tui:[/] {nothing}", soft_wrap=True, highlight=False)
        return EXIT_NOTHING_MEASURED
    return 0


def nothing_measured(session: Session) -> str:
    """The one line of a report in which no enabled backend has a number ("" where one has): each was not eligible
    for the workload on this device, out of memory or failed."""
    if any(state.eager for state in session.backends.values()):
        return ""
    device = session.environment.device if session.environment else "this device"
    why = ", ".join(f"{b.label} {STATUS_TEXT.get(session.backends[b].status, session.backends[b].status)}"
                    for b in session.enabled)
    return f"nothing measured: no selected backend ran this workload on {device} ({why or 'no backend selected'})"


def packed_alternatives(workload: Workload, device: str, err: Console) -> tuple[list[PackedRow], str]:
    """A padded workload's packed attention (one child process): its rows, or the one line that says why it was
    not measured ("", with no rows, for a workload that is not padded)."""
    if not workload.lengths:
        return [], ""
    why = packed_refusal(device)
    if why:
        return [], f"packed attention (varlen_attn, nested jagged SDPA) not measured: {why}"
    with err.status("measuring packed attention on the real tokens", spinner="dots"):
        answer = measure_packed([lab_spec(workload, device)], PACKED_TIMEOUT_S)[0]
    return packed_rows(answer), ""
