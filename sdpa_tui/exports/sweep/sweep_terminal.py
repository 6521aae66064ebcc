"""The sweep on the terminal: the progress line per length, the table, the chart and the findings.

Rich renderables for ``sdpa-tui sweep`` and the UI's sweep view; the files are in ``sweep_documents``.
"""

from __future__ import annotations

import math

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ...core.backends import ALL_BACKENDS, Backend
from ...core.protocol.records import Environment
from ...core.sweep.sweep_findings import pick_findings
from ...core.sweep.sweep_points import ERROR, NOT_ELIGIBLE, OOM, PENDING, SKIPPED, Sweep, SweepPoint, clock_of
from ...core.units import us_number
from ..lab.report_tables import environment_line
from .sweep_format import describe_base, fastest_by_length, mib_cell

CELL = {OOM: "OOM", NOT_ELIGIBLE: "inelig", ERROR: "error", SKIPPED: "skip", PENDING: "…"}
"""What a table cell says where a backend did not run."""
MARK = {Backend.CUDNN: "C", Backend.FLASH: "F", Backend.EFFICIENT: "E", Backend.MATH: "M"}
"""One letter per backend in the chart (readable without colour)."""
STYLE = {Backend.CUDNN: "green", Backend.FLASH: "cyan", Backend.EFFICIENT: "magenta", Backend.MATH: "yellow"}
CHART_HEIGHT = 10


def progress_line(points: list[SweepPoint]) -> str:
    """One line per length measured, on stderr while the sweep runs."""
    if not points:
        return ""
    parts = []
    for p in points:
        if p.ran and p.time_us is not None:
            parts.append(f"{p.backend.label} {us_number(p.time_us)} µs")
        elif p.status != NOT_ELIGIBLE:
            parts.append(f"{p.backend.label} {CELL.get(p.status, p.status)}")
    return f"seq {points[0].seq}: " + (" · ".join(parts) or "nothing ran")


def _time_unit(us: float) -> str:
    """A time with its unit, three significant digits: 9.6 µs, 210 µs, 1.06 ms, 30.7 ms, 1.2 s."""
    if us < 1_000:
        return f"{us:.3g} µs"
    if us < 1_000_000:
        return f"{us / 1_000:.3g} ms"
    return f"{us / 1_000_000:.3g} s"


def _seq_label(seq: int) -> str:
    """Short x-axis label: 512, 1k, 32k, 1M (k = 1024), other lengths in full."""
    if seq >= 1 << 20 and seq % (1 << 20) == 0:
        return f"{seq >> 20}M"
    if seq >= 1024 and seq % 1024 == 0:
        return f"{seq >> 10}k"
    return str(seq)


def log_position(value: float, low: float, high: float, steps: int) -> int:
    """Where ``value`` falls on a log scale from ``low`` (0) to ``high`` (``steps``), rounded."""
    if steps <= 0 or high <= low:
        return 0
    frac = (math.log(value) - math.log(low)) / (math.log(high) - math.log(low))
    return max(0, min(steps, round(frac * steps)))


def _columns(sweep: Sweep, points: list[SweepPoint]) -> tuple[list[Backend], set[Backend]]:
    """Backends with a column (not those ineligible at every length) and those with a memory column."""
    shown = [b for b in sweep.enabled
             if any(p.backend == b and p.status not in (NOT_ELIGIBLE, SKIPPED, PENDING) for p in points)]
    with_memory = {p.backend for p in points if p.peak_mib is not None}
    return shown, with_memory


def sweep_table(sweep: Sweep, points: list[SweepPoint], kv_fixed: int | None) -> Table:
    shown, with_memory = _columns(sweep, points)
    clock = clock_of(points)
    gpu = clock == "GPU/call"
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True)
    table.add_column("seq", justify="right", no_wrap=True)
    unit = "GPU µs" if gpu else "eager µs"
    for b in shown:
        table.add_column(f"{b.label}\n{unit}", justify="right", no_wrap=True)
        if b in with_memory:
            table.add_column("\nMiB", justify="right", no_wrap=True)
    fastest = fastest_by_length(points)
    by = {(p.seq, p.backend): p for p in points}
    for seq in sweep.seqs:
        cells = [str(seq)]
        for b in shown:
            p = by.get((seq, b))
            if p is None:
                cells.append("")
            elif p.ran:
                value = p.gpu_us if gpu else p.eager_us
                cells.append(us_number(value) + ("*" if fastest.get(seq) == b else " "))
            else:
                cells.append(CELL.get(p.status, p.status) + " ")
            if b in with_memory:
                cells.append(mib_cell(p.peak_mib) if p is not None and p.ran else "")
        table.add_row(*cells)
    return table


def chart_lines(points: list[SweepPoint], width: int = 80) -> list[Text]:
    """A line chart as text: one letter per backend at each length, time on a log scale."""
    gpu = clock_of(points) == "GPU/call"
    timed = [(p.seq, p.backend, p.gpu_us if gpu else p.eager_us) for p in points if p.ran]
    timed = [(s, b, t) for s, b, t in timed if t is not None and t > 0]
    if not timed:
        return []
    seqs = sorted({s for s, _, _ in timed})
    backends = [b for b in ALL_BACKENDS if any(b == x for _, x, _ in timed)]
    low, high = min(t for *_, t in timed), max(t for *_, t in timed)
    height = CHART_HEIGHT if high > low * 1.05 else 1
    steps = height - 1
    # the grid: (row from the bottom, seq index) -> letters
    cells: dict[tuple[int, int], list[Backend]] = {}
    for s, b, t in timed:
        cells.setdefault((log_position(t, low, high, steps), seqs.index(s)), []).append(b)
    ticks = {row: _time_unit(low * (high / low) ** (row / steps)) if steps else _time_unit(low)
             for row in range(height) if row in (0, steps) or (steps - row) % 3 == 0}
    axis_width = max(len(t) for t in ticks.values())
    labels = [_seq_label(s) for s in seqs]
    crowd = max(len(v) for v in cells.values())
    slot = max(max(len(x) for x in labels) + 1, crowd + 1, 4)
    room = width - axis_width - 2
    slot = max(slot, min(8, room // len(seqs)))  # few lengths: spread them out
    if slot * len(seqs) > room:  # too many lengths for the width: narrower slots, fewer labels
        slot = max(2, room // len(seqs))
    lines: list[Text] = []
    legend = Text(f"{'GPU/call' if gpu else 'eager/call'} time by length, log scale: ")
    for i, b in enumerate(backends):
        legend.append(MARK[b], style=f"bold {STYLE[b]}")
        legend.append(f" {b.label}" + (" · " if i < len(backends) - 1 else ""))
    lines.append(legend)
    for row in range(height - 1, -1, -1):
        line = Text(f"{ticks.get(row, ''):>{axis_width}} " + ("┤" if row in ticks else "│"))
        for i in range(len(seqs)):
            here = cells.get((row, i), [])
            letters = "".join(MARK[b] for b in here)
            if len(letters) > slot - 1:
                letters = letters[: max(slot - 2, 0)] + "+"
            line.append(" ")
            for b, letter in zip(here, letters):  # a crowded cell ends in "+"
                line.append(letter, style=f"bold {STYLE[b]}" if letter != "+" else None)
            line.append(" " * (slot - 1 - len(letters)))
        lines.append(line)
    axis = " " * axis_width + " └" + "".join("─┴" + "─" * (slot - 2) for _ in seqs)
    lines.append(Text(axis.rstrip("─") if len(axis) > width else axis))
    label_line = [" "] * (axis_width + 2 + slot * len(seqs) + 8)
    end = -1
    for i, text in enumerate(labels):
        start = axis_width + 2 + i * slot + 1 - len(text) // 2
        start = max(start, axis_width + 2)
        if start <= end + 1:
            continue  # would touch the previous label: leave this one out
        label_line[start:start + len(text)] = text
        end = start + len(text) - 1
    lines.append(Text("".join(label_line).rstrip() + "   seq"))
    return lines


def table_legend(sweep: Sweep, points: list[SweepPoint]) -> str:
    """What the marks in the table mean: only those that appear."""
    shown, _ = _columns(sweep, points)
    statuses = {p.status for p in points if p.backend in shown}
    legend = ["* fastest at that length"] if fastest_by_length(points) else []
    meaning = {OOM: "out of memory", NOT_ELIGIBLE: "not eligible", ERROR: "failed", SKIPPED: "not measured",
               PENDING: "not measured yet"}
    legend += [f"{CELL[s]} {meaning[s]}" for s in (OOM, NOT_ELIGIBLE, ERROR, SKIPPED, PENDING) if s in statuses]
    hidden = [b.label for b in sweep.enabled if b not in shown]
    if hidden:
        legend.append(f"not shown, never eligible: {', '.join(hidden)}")
    return " · ".join(legend)


def render(
    sweep: Sweep,
    points: list[SweepPoint],
    findings: list[str],
    environment: Environment | None,
    kv_fixed: int | None,
    width: int = 160,
) -> RenderableType:
    title = f"SDPA sweep · {describe_base(sweep.workloads[0], kv_fixed)} · medians of {clock_of(points)}"
    parts: list[RenderableType] = [Text(environment_line(environment)), Text(title),
                                   sweep_table(sweep, points, kv_fixed)]
    parts.append(Text(table_legend(sweep, points), style="dim"))
    chart = chart_lines(points, width)
    if chart:
        parts += [Text(""), *chart]
    if findings or sweep.stopped:
        parts.append(Text(""))
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(overflow="fold")
        for line in findings:
            grid.add_row("•", line)
        if sweep.stopped:
            grid.add_row("•", f"The sweep {sweep.stopped}")
        parts.append(Text("crossovers and limits:", style="bold"))
        parts.append(grid)
    picks = pick_findings(sweep)
    if picks:
        parts += [Text(""), Text("SDPA's pick:", style="bold")]
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(overflow="fold")
        for line in picks:
            grid.add_row("•", Text(line, style="bold yellow" if sweep.not_fastest else ""))
        parts.append(grid)
    if environment is not None and environment.notes:
        parts.append(Text("; ".join(environment.notes), style="yellow"))
    return Group(*parts)
