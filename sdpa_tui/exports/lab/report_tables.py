"""The comparison table, as Rich renderables (terminal) and as Markdown (report.md)."""

from __future__ import annotations

import io
from collections.abc import Sequence

from rich import box
from rich.console import Console, Group
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ...core.lab.report_model import ReportModel
from ...core.lab.session import BackendRow, Session
from ...core.protocol.records import Environment
from ...core.status import Status
from .packed_rows import SHORT, PackedRow, packed_lines
from .report_data import STATUS_TEXT, faster_lines, fmt_error, fmt_num, fmt_tflops, fmt_us, status_text, verdicts

COLUMNS = (
    "backend",
    "status",
    "main kernel",
    "kernels/call",
    "kernel µs",
    "GPU/call µs",
    "eager/call µs",
    "vs MATH",
    "TFLOP/s",
    "% of peak",
    "peak MiB",
    "max rel err",
    "best at",
)


TERMINAL_COLUMNS = (
    "backend", "status", "main kernel", "k/call", "kernel", "GPU", "eager", "×MATH", "TFLOP/s", "%pk", "MiB", "err",
)
TERMINAL_SOURCE = {
    "k/call": "kernels/call", "kernel": "kernel µs", "GPU": "GPU/call µs", "eager": "eager/call µs",
    "×MATH": "vs MATH", "MiB": "peak MiB", "%pk": "% of peak", "err": "max rel err",
}
SHORT_STATUS = {Status.NOT_ELIGIBLE: "ineligible", Status.OOM: "OOM", Status.DISABLED: "off"}


def environment_line(env: Environment | None) -> str:
    if env is None:
        return "environment unknown (the engine did not start)"
    versions = f"torch {env.torch_version}"
    if env.cuda_version:
        versions += f", CUDA {env.cuda_version}"
    if env.cudnn_version:
        versions += f", cuDNN {env.cudnn_version}"
    if env.is_cpu:
        threads = f", {env.cpu_threads} thread{'s' if env.cpu_threads != 1 else ''}" if env.cpu_threads else ""
        allocator = f", {env.cpu_allocator}" if env.cpu_allocator else ""
        return f"CPU: {env.device_name}{threads}{allocator} · {versions}"
    memory = f", {env.memory_total_bytes / 2**30:.0f} GiB" if env.memory_total_bytes else ""
    return f"{env.device}: {env.device_name} (sm {env.sm}, {env.sm_count} SMs{memory}) · {versions}"


def dispatch_env_line(env: Environment | None) -> str:
    """What else decides dispatch (the cuDNN library loaded, the Flash implementation, flags found at start,
    variables): what differs from a plain install, or that nothing does."""
    if env is None:
        return ""
    notes = env.dispatch_env.notes()
    if notes:
        return "dispatch environment: " + "; ".join(notes)
    cudnn = env.cudnn_loaded
    where = f"cuDNN {cudnn.version} from {'the wheel' if cudnn.wheel_path else cudnn.path}, " if cudnn else ""
    return f"dispatch environment: {where}SDPA flags as torch starts, no SDPA variables set"


def dispatch_line(session: Session) -> str:
    d = session.dispatch
    if d is None:
        return "dispatch: unknown"
    order = " > ".join(d.priority_order) if d.priority_order else "n/a"
    flags = ", ".join(b.short for b in session.enabled) or "none"
    if d.choice is None:
        return f"dispatch with flags [{flags}]: no kernel: {d.reason} (priority {order})"
    return f"dispatch with flags [{flags}]: SDPA picks {d.choice.value} (priority {order})"


def context_lines(model: ReportModel) -> list[str]:
    """What the numbers are measured against, and how the flags were applied."""
    session, rows = model.session, model.rows
    lines = []
    peak = session.peaks.get(session.workload.dtype)
    if peak is not None:
        value = f"{fmt_tflops(peak.tflops)} TFLOP/s" if peak.tflops else "n/a"
        lines.append(f"% of peak: against {value} measured on this device ({peak.detail})")
        above = [r.backend.label for r in rows if r.tflops and peak.tflops and r.tflops > peak.tflops]
        if above:
            lines.append(f"% of peak left out for {', '.join(above)}: faster than that matmul, so it is no ceiling here")
    d = session.dispatch
    if d is not None and d.note:
        lines.append(d.note)
    accuracy = {r.backend: r for r in rows if r.max_rel_error is not None}
    if accuracy:
        lines.append("err: max |out - ref| / max |ref| of the forward output, ref = float64 MATH on the same inputs")
    grads = [r for r in rows if r.grad_max_rel]
    if grads:
        lines.append("gradients, max |grad - ref| / max |ref| for dq, dk, dv: " + " · ".join(
            f"{r.backend.label} {'/'.join(f'{e:.1e}' for e in r.grad_max_rel)}" for r in grads))
    lines += sm_clock_lines(rows)
    for row in rows:
        if row.nonfinite:
            lines.append(f"{row.backend.label}: NaN or Inf in {', '.join(row.nonfinite)}")
    for row in rows:
        if row.status == Status.DISABLED and row.eligibility:
            could = "could run this workload" if row.eligibility == "ok" else f"could not run it: {row.eligibility_reason}"
            lines.append(f"{row.backend.label}: flag off; {could}")
    return lines


SM_CLOCK_MOVED = 0.03
"""SM clocks further apart than this (a fraction) between the backends' samples or a backend's two clocks are
named: a time taken at a lower clock reads slower (docs/guide/clocks.md)."""


def sm_clock_lines(rows: list[BackendRow]) -> list[str]:
    """The GPU's SM clock (NVML) the GPU times were taken at, when it moved enough to matter; and a GPU/call below
    the kernel clock, with the clocks each was taken at."""
    timed = [r for r in rows if r.gpu_sm_mhz]
    if not timed:
        return []
    clocks = [r.gpu_sm_mhz for r in timed] + [r.kernel_sm_mhz for r in timed if r.kernel_sm_mhz]
    lines = []
    low, high = min(clocks), max(clocks)
    if high - low > SM_CLOCK_MOVED * high:
        lines.append("SM clock while timing (NVML, median): " + " · ".join(
            f"{r.backend.label} GPU/call {r.gpu_sm_mhz:,.0f}" + (f", kernel {r.kernel_sm_mhz:,.0f}" if r.kernel_sm_mhz else "")
            for r in timed) + " MHz: a time taken at a lower clock reads slower")
    for r in timed:
        if (r.gpu_us and r.kernel_us and r.kernel_sm_mhz and r.gpu_us.median < r.kernel_us.median
                and r.kernel_sm_mhz < r.gpu_sm_mhz * (1 - SM_CLOCK_MOVED / 3)):
            lines.append(f"{r.backend.label}: GPU/call below the kernel clock: the kernels were timed at "
                         f"{r.kernel_sm_mhz:,.0f} MHz, GPU/call at {r.gpu_sm_mhz:,.0f} MHz")
    return lines


def row_cells(row: BackendRow, notes: list[str]) -> list[str]:
    kernel_unit = row.kernel_us is not None
    return [
        row.backend.value,
        status_text(row),
        row.main_kernel or "–",
        str(row.kernels_per_call) if row.kernels_per_call else "–",
        fmt_us(row.kernel_us) if kernel_unit else "–",
        fmt_us(row.gpu_us),
        fmt_us(row.eager_us),
        fmt_num(row.speedup_vs_math, 2, "x"),
        fmt_tflops(row.tflops),
        fmt_num(row.pct_of_peak, 0, "%"),
        fmt_num(row.peak_mib, 1),
        fmt_error(row.max_rel_error),
        ", ".join(notes),
    ]


KERNEL_COLUMN_MAX = 48
KERNEL_COLUMN_MIN = 20
"""The main kernel column gets what the numbers leave, up to the max; below the min it moves under the table."""


DROP_ORDER = ("err", "%pk", "k/call")
"""Columns left out, in this order, when a terminal is too narrow even without the main kernel."""


def _terminal_table(session: Session, rows: list[BackendRow], notes: dict, kernel_width: int | None,
                    dropped: tuple[str, ...] = (), packed: Sequence[PackedRow] = ()) -> Table:
    """The table, with a main kernel column of at most ``kernel_width`` characters (None: no such column)."""
    wide = kernel_width is not None
    table = Table(
        title=f"SDPA backends · {session.workload.describe()} · medians, µs",
        title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True,
    )
    headers = tuple(c for c in TERMINAL_COLUMNS if c not in dropped and (wide or c != "main kernel"))
    for name in headers:
        if name == "main kernel":
            table.add_column(name, overflow="ellipsis", no_wrap=True, max_width=kernel_width)
        else:
            table.add_column(name, justify="left" if name in ("backend", "status") else "right", no_wrap=True)
    for row in rows:
        cells = dict(zip(COLUMNS, row_cells(row, notes[row.backend])))
        cells["backend"] = row.backend.label if wide else row.backend.short
        cells["status"] = SHORT_STATUS.get(row.status, row.status)
        values = [cells[TERMINAL_SOURCE.get(h, h)] for h in headers]
        table.add_row(*values, style=None if row.status == Status.OK else "dim")
    for alternative in packed:  # not SDPA backends: named as alternatives
        cells = alternative.cells()
        cells["backend"] = alternative.label if wide else SHORT[alternative.name]
        cells["status"] = "ok" if alternative.cost else "not run"
        table.add_row(*[cells[TERMINAL_SOURCE.get(h, h)] for h in headers],
                      style="italic" if alternative.cost else "dim italic")
    return table


def _table_width(table: Table, width: int) -> int:
    console = Console(width=max(width, 1000), file=io.StringIO())  # measure unconstrained
    return Measurement.get(console, console.options, table).maximum


def rich_report(session: Session, width: int = 160, packed: Sequence[PackedRow] = ()) -> Group:
    """The table for a terminal of ``width`` columns: short cells, reasons and verdicts below it.

    Numbers are never shortened: the main kernel column shrinks to what they leave, and when
    that is too little to read, the main kernels move under the table. ``packed``: packed attention's rows (a padded
    workload), below the backends.
    """
    model = ReportModel.of(session)
    notes = verdicts(model)
    rows = list(model.rows)
    table = _terminal_table(session, rows, notes, KERNEL_COLUMN_MAX, packed=packed)
    excess = _table_width(table, width) - width
    wide = True
    if excess > 0:
        longest = max(len("main kernel"), *(len(r.main_kernel or "–") for r in rows))
        kernel_width = min(longest, KERNEL_COLUMN_MAX) - excess
        wide = kernel_width >= KERNEL_COLUMN_MIN
        table = _terminal_table(session, rows, notes, kernel_width if wide else None, packed=packed)
        dropped: tuple[str, ...] = ()
        for column in DROP_ORDER:
            if wide or _table_width(table, width) <= width:
                break
            dropped += (column,)
            table = _terminal_table(session, rows, notes, None, dropped, packed)
    env_notes = session.environment.dispatch_env.notes() if session.environment else []
    lines: list = [Text(environment_line(session.environment)),
                   Text(dispatch_env_line(session.environment), style="yellow" if env_notes else "dim"),
                   table, Text(dispatch_line(session))]
    faster_style = "bold yellow" if model.faster else ""
    lines += [Text(line, style=faster_style) for line in faster_lines(model)]
    lines += [Text(line) for line in packed_lines(session, packed)]
    if not wide:
        lines += [Text(f"{r.backend.label} main kernel: {r.main_kernel}") for r in rows if r.main_kernel]
    for row in rows:
        if row.reason and row.status not in (Status.OK, Status.DISABLED):
            lines.append(Text(f"{row.backend.label} {STATUS_TEXT.get(row.status, row.status)}: {row.reason}"))
    best = [f"{b.label}: {', '.join(n)}" for b, n in notes.items() if n]
    if best:
        lines.append(Text("best at: " + " · ".join(best)))
    lines += [Text(line, style="dim") for line in context_lines(model)]
    if session.environment and session.environment.notes:
        lines.append(Text("; ".join(session.environment.notes), style="yellow"))
    return Group(*lines)


def markdown_report(session: Session, packed: Sequence[PackedRow] = ()) -> str:
    model = ReportModel.of(session)
    notes = verdicts(model)
    out = [
        f"# SDPA backends · {session.workload.describe()}",
        "",
        environment_line(session.environment),
        "",
        dispatch_env_line(session.environment),
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join("---:" if 2 < i < len(COLUMNS) - 1 else "---" for i in range(len(COLUMNS))) + "|",
    ]
    for row in model.rows:
        cells = [c.replace("|", "\\|") for c in row_cells(row, notes[row.backend])]
        cells[2] = f"`{cells[2]}`" if row.main_kernel else cells[2]
        out.append("| " + " | ".join(cells) + " |")
    for alternative in packed:
        cells = [c.replace("|", "\\|") for c in alternative.cells().values()]
        out.append("| " + " | ".join([f"*{alternative.label}*", *cells[1:]]) + " |")
    out += ["", dispatch_line(session), ""]
    out += [f"- {line}" for line in packed_lines(session, packed)] + ([""] if packed else [])
    lines, named = faster_lines(model), len(model.faster)
    out += [f"**{line}**" if i < named else line for i, line in enumerate(lines)] + ([""] if lines else [])
    out += [f"- {line}" for line in context_lines(model)] + [""]
    out += [
        "Clocks: *kernel* is the sum of the CUDA kernels of one call (CUPTI, via torch.profiler); "
        "*GPU/call* is device time per call: calls replayed back to back in a CUDA graph, the span between two "
        "CUDA events divided by the calls (no host launch overhead); "
        "*eager/call* is a host-timed back-to-back loop. Medians. On the CPU, kernel is the sum "
        "of the self times of the ATen ops of one call and GPU/call does not apply.",
        "",
    ]
    return "\n".join(out)
