"""The Calls table as Rich renders it (headless ``watch --report``); plain text cells shared with the UI."""

from __future__ import annotations

from rich.table import Table

from ..core.kernel_names import short_name
from ..core.watched_calls import NOT_INTERCEPTED_NOTE, CallRow, WatchReport, backend_label


def time_cell(row: CallRow) -> str:
    if row.gpu_us is not None:
        return f"{row.gpu_us:,.1f} µs gpu"
    if row.host_us is not None:
        return f"{row.host_us:,.1f} µs cpu"
    return "—"


def kernels_cell(row: CallRow, note: str = "") -> str:
    if row.kernels:
        return ", ".join(short_name(k) for k in row.kernels[:3]) + (f" +{len(row.kernels) - 3}" if len(row.kernels) > 3 else "")
    return note or "not seen yet"


def calls_table(report: WatchReport) -> Table:
    table = Table(title=f"SDPA calls of {' '.join(report.program)}", title_justify="left")
    for name in ("call", "site", "module", "count", "calls/s", "share", "backend", "time/call", "kernels"):
        table.add_column(name, justify="right" if name in ("count", "calls/s", "share", "time/call") else "left")
    for row in report.rows:
        table.add_row(
            row.signature.describe(), row.site, row.module or "—", f"{row.count:,}",
            f"{row.calls_per_s:,.1f}" if row.calls_per_s else "—",
            f"{row.share:.0%}" if row.share is not None else "—",
            backend_label(row.backend) if row.backend else f"none: {row.choice_error}",
            time_cell(row), kernels_cell(row, report.kernels_note),
        )
    return table


def why_not_lines(row: CallRow) -> list[str]:
    return [f"{backend_label(name)}: {reason}" for name, reason in row.why_not.items()]


def footnotes(report: WatchReport) -> list[str]:
    lines = []
    if report.compiled:
        lines.append(f"compiled: {', '.join(report.compiled)} — {NOT_INTERCEPTED_NOTE}")
        kernels = ", ".join(short_name(k) for k in report.compiled_kernels) or "none seen yet"
        lines.append(f"attention kernels seen in compiled regions: {kernels}")
    if not report.rows:
        lines.append("no SDPA call was seen")
    return lines
