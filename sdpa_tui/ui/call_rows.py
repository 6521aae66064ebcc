"""What the Calls view writes for a watched call: the table's cells and the detail pane's text.

Plain strings only (no widgets), so the view's tests read what the user reads.
"""

from __future__ import annotations

import os

from ..core.backends import ALL_BACKENDS
from ..core.kernel_names import short_name
from ..core.watched_calls import CPU_KERNELS_NOTE, NOT_INTERCEPTED_NOTE, CallRow, WatchReport, backend_label, dtype_name
from ..watch.tables import kernels_cell, time_cell

COLUMNS: tuple[tuple[str, str], ...] = (
    ("site", "site"), ("module", "module"), ("q", "q shape"), ("kv", "kv shape"), ("dtype", "dtype"),
    ("mask", "mask"), ("causal", "causal"), ("count", "count"), ("rate", "calls/s"), ("share", "share"),
    ("backend", "backend"), ("time", "time/call"), ("kernels", "kernels"),
)
"""(key, heading) of each column of the Calls table."""
RIGHT_ALIGNED = frozenset({"count", "rate", "share", "time"})


def shape(dims: tuple[int, ...] | None) -> str:
    return "[" + ",".join(str(d) for d in dims or ()) + "]"


def short_site(site: str) -> str:
    """``path/to/train.py:42`` → ``train.py:42`` (the detail pane keeps the whole path)."""
    return os.path.basename(site) or site


def table_cells(row: CallRow, kernels_note: str = "") -> dict[str, str]:
    s = row.signature
    return {
        "site": short_site(row.site),
        "module": row.module or "—",
        "q": shape(s.q_shape),
        "kv": shape(s.kv_shape),
        "dtype": dtype_name(s.dtype),
        "mask": s.mask,
        "causal": "yes" if s.causal else "",
        "count": f"{row.count:,}",
        "rate": f"{row.calls_per_s:,.1f}" if row.calls_per_s else "—",
        "share": f"{row.share:.0%}" if row.share is not None else "—",
        "backend": backend_label(row.backend) if row.backend else "none",
        "time": time_cell(row),
        "kernels": kernels_cell(row, "— (CPU)" if kernels_note == CPU_KERNELS_NOTE else kernels_note),
    }


def flags_line(flags: tuple[str, ...]) -> str:
    if not flags or set(flags) >= {b.value for b in ALL_BACKENDS}:
        return "every backend enabled (no sdpa_kernel context, no flag switched off)"
    off = [backend_label(b.value) for b in ALL_BACKENDS if b.value not in flags]
    return f"only {', '.join(backend_label(f) for f in flags)} enabled (off: {', '.join(off)})"


def detail_lines(row: CallRow, report: WatchReport) -> list[str]:
    """The selected call, in full: why not each other backend (torch's words), the flags in force."""
    s = row.signature
    lines = [
        s.describe(),
        f"site    {row.site}",
        f"module  {row.module or '— (not called from an nn.Module)'}",
        f"device  {s.device} · dropout_p {s.dropout_p:g} · scale {'default' if s.scale is None else f'{s.scale:g}'}"
        f" · gqa {'yes' if s.gqa else 'no'} · autograd {'records it (training)' if s.grad else 'off'}",
    ]
    if s.mask != "none":
        lines.append(f"mask    {s.mask} {shape(s.mask_shape)}")
    chosen = backend_label(row.backend) if row.backend else f"none: {row.choice_error}"
    lines += ["", f"SDPA chose {chosen}"]
    for name, reason in row.why_not.items():
        lines.append(f"  why not {backend_label(name)}: {reason}")
    lines += ["", f"flags   {flags_line(s.flags)}"]
    if s.priority:
        lines.append(f"order   {' > '.join(backend_label(p) for p in s.priority)}")
    samples = f" (median of {row.samples} timed calls)" if row.samples else ""
    lines.append(f"time    {time_cell(row)}{samples}")
    lines.append(f"kernels {', '.join(short_name(k) for k in row.kernels) or kernels_cell(row, report.kernels_note)}")
    if row.pids and len(row.pids) > 1:
        lines.append(f"pids    {', '.join(str(p) for p in row.pids)}")
    if report.compiled:
        lines += ["", f"compiled: {', '.join(report.compiled)}", NOT_INTERCEPTED_NOTE]
        kernels = ", ".join(short_name(k) for k in report.compiled_kernels) or "none seen yet"
        lines.append(f"attention kernels seen in compiled regions: {kernels}")
    return lines


def program_state(report: WatchReport, exit_code: int | None, stopped: bool) -> str:
    """One line: running for how long, or how it ended."""
    calls = sum(r.count for r in report.rows)
    seen = f"{len(report.rows)} signature{'s' * (len(report.rows) != 1)}, {calls:,} call{'s' * (calls != 1)}"
    if exit_code is None:
        return f"running {report.duration_s:,.1f} s · {seen}"
    how = "stopped by sdpa-tui" if stopped else "exited"
    if exit_code < 0:
        return f"{how}: killed by signal {-exit_code} after {report.duration_s:,.1f} s · {seen} (kept)"
    return f"{how} with code {exit_code} after {report.duration_s:,.1f} s · {seen} (kept)"


def traceback_tail(error: str, lines: int = 3) -> str:
    return "\n".join(error.rstrip().splitlines()[-lines:])
