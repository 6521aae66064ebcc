"""``watch --report`` as text for a terminal or a pipe, and as Markdown: a table of one line per signature that
fits the width (only the call's words wrap, never a number), then a block of details under the table per row.

Columns that say nothing here are left out (no ``bwd time`` when no call records autograd, no ``ranks`` outside a
distributed job); what holds for every row (the clock, "no GPU kernels on the CPU", a why-not reason every call
shares) is said once. Each row's details block holds its whole signature, every call site with its count, modules,
the backend and why not the others, times, kernels, backward, the output check and the compiled graph's lines.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...core.calls.advice import SignatureAdvice
from ...core.calls.compiled_twins import cost_lines
from ...core.calls.host_pace import typical_batch
from ...core.calls.watch_report import CallRow, WatchReport, backend_label
from ...core.calls.watched_calls import CPU_KERNELS_NOTE, UninspectedCalls
from ...core.traces.kernel_short_names import short_name
from ...core.units import NA, duration
from ...exports.plain_table import fitted_lines, wrapped
from . import gradient_text
from .call_cells import compiled_lines, count_cell, footnotes, per_rank_lines, ranks_cell, summary_cell

MAX_SITE_WIDTH = 28
INDENT = "    "
LABEL_WIDTH = 10
CHECK_FAILED_MARK = "✗"
FASTER_MARK = "→"
WAITED_US = 10.0
"""A host lead under this is a launch's latency: the GPU was waiting for the host."""


@dataclass(frozen=True)
class Column:
    heading: str
    cell: Callable[[int, CallRow], str]
    right: bool = False


def report_text(report: WatchReport, width: int) -> str:
    """The whole report in lines no wider than ``width`` (but for a call column at its least)."""
    rows = report.rows
    lines = wrapped(f"SDPA calls of {' '.join(report.program)}", width)
    lines += wrapped(summary_line(report), width)
    if rows:
        lines += [*wrapped(clock_line(report), width), "", *table_lines(report, width)]
        marks = legend(report)
        if marks:
            lines += wrapped(marks, width)
    lines += uninspected_lines(report.uninspected, width)
    shared = shared_reasons(rows)
    if shared:
        lines += ["", *shared_reasons_lines(shared, len(rows), width)]
    for i, row in enumerate(rows):
        lines += ["", *details_lines(i, row, advice_of(report, i), report, shared, width)]
    notes = footnotes(report)
    if notes:
        lines.append("")
        lines += [line for note in notes for line in wrapped(note, width, INDENT)]
    return "\n".join(lines) + "\n"


def advice_of(report: WatchReport, i: int) -> SignatureAdvice | None:
    return report.advice[i] if i < len(report.advice) else None


def summary_line(report: WatchReport) -> str:
    calls = sum(r.count for r in report.rows)
    what = f"{len(report.rows)} signature{'s' * (len(report.rows) != 1)}, {calls:,} call{'s' * (calls != 1)}"
    ended = "running" if report.exit_code is None else f"exit code {report.exit_code}"
    return f"{what} in {report.duration_s:,.1f} s, {ended}"


def _backward_untimed(report: WatchReport) -> bool:
    """Calls recorded autograd on the CPU, where no backward has a time (no kernels to time it by)."""
    return (report.kernels_note == CPU_KERNELS_NOTE and any(r.signature.grad for r in report.rows)
            and not any(r.backward is not None and r.backward.kernel_us is not None for r in report.rows))


def clock_line(report: WatchReport) -> str:
    """What the times are, once for every row."""
    devices = {r.signature.device.split(":")[0] for r in report.rows}
    clocks = []
    if "cuda" in devices:
        clocks.append("the GPU's kernels (CUPTI)" + (" on CUDA" if len(devices) > 1 else ""))
    if "cpu" in devices:
        untimed = "; the backward is timed by its GPU kernels alone" if _backward_untimed(report) else ""
        clocks.append("the host's clock" + (" on the CPU" if len(devices) > 1 else "") +
                      (f" (no GPU kernels on the CPU{untimed})" if report.kernels_note == CPU_KERNELS_NOTE else ""))
    return f"times: median per call, {' and '.join(clocks)}" if clocks else ""


# -- the table -----------------------------------------------------------------------------------------------------
def site_cell(row: CallRow) -> str:
    """The busiest site's file name and line; a second site of the same file adds its line (``a.py:20,22``), of
    other files a count (``a.py:20 +2``): every site, with its calls, is in the details."""
    sites = [site for site, _ in row.sites] or [row.site]
    names = [_short_site(site) for site in sites]
    file, _, line = names[0].rpartition(":")
    same_file = [n.rpartition(":")[2] for n in names if n.rpartition(":")[0] == file]
    text = f"{file}:{','.join(same_file)}" if file and len(same_file) == len(names) else names[0] + (
        f" +{len(names) - 1}" if len(names) > 1 else "")
    return text if len(text) <= MAX_SITE_WIDTH else "…" + text[-(MAX_SITE_WIDTH - 1):]


def _short_site(site: str) -> str:
    return os.path.basename(site) or site


def backend_text(row: CallRow) -> str:
    if row.compiled:
        return backend_label(row.backend) if row.backend else "?"
    return backend_label(row.backend) if row.backend else "none"


def forward_cell(row: CallRow) -> str:
    summary = row.kernel_us or row.host_us
    return duration(summary.median) + row.time_mark if summary is not None else NA


def backward_time_cell(row: CallRow) -> str:
    back = row.backward
    return duration(back.kernel_us.median) if back is not None and back.kernel_us is not None else NA


def share_text(row: CallRow) -> str:
    if row.share is None:
        return NA
    return "<1%" if 0 < row.share < 0.005 else f"{row.share:.0%}"


def mark_cell(row: CallRow, advice: SignatureAdvice | None) -> str:
    failed = row.check is not None and row.check.failed
    return (CHECK_FAILED_MARK if failed else "") + (FASTER_MARK if advice is not None and advice.best else "")


def legend(report: WatchReport) -> str:
    marks = "".join(mark_cell(r, advice_of(report, i)) for i, r in enumerate(report.rows))
    said = []
    if CHECK_FAILED_MARK in marks:
        said.append(f"{CHECK_FAILED_MARK} its sampled output or gradient check failed")
    if FASTER_MARK in marks:
        said.append(f"{FASTER_MARK} a faster alternative was measured (advice below)")
    return " · ".join(said)


def columns(report: WatchReport) -> list[Column]:
    rows = report.rows
    chosen = [Column("#", lambda i, r: str(i + 1), right=True), Column("site", lambda i, r: site_cell(r)),
              Column("call", lambda i, r: r.signature.brief() + (" compiled" if r.compiled else ""))]
    if any(r.ranks for r in rows):
        chosen.append(Column("ranks", lambda i, r: ranks_cell(r)))
    chosen += [Column("backend", lambda i, r: backend_text(r)), Column("count", lambda i, r: count_cell(r), True),
               Column("fwd time", lambda i, r: forward_cell(r), True)]
    if any(r.signature.grad or r.backward is not None for r in rows) and not _backward_untimed(report):
        chosen.append(Column("bwd time", lambda i, r: backward_time_cell(r), True))
    chosen.append(Column("share", lambda i, r: share_text(r), True))
    if legend(report):
        chosen.append(Column("", lambda i, r: mark_cell(r, advice_of(report, i))))
    return chosen


def table_lines(report: WatchReport, width: int) -> list[str]:
    """The heading and one line per row; the call column takes the width the others leave and wraps its words."""
    cols = columns(report)
    cells = [[c.cell(i, row) for c in cols] for i, row in enumerate(report.rows)]
    call = next(j for j, c in enumerate(cols) if c.heading == "call")
    return fitted_lines([c.heading for c in cols], cells, width, wrap=call, right=[c.right for c in cols])


# -- under the table -----------------------------------------------------------------------------------------------
def uninspected_lines(found: Sequence[UninspectedCalls], width: int) -> list[str]:
    """Calls counted but not inspected (SDPA inside C++, on nested tensors): how many, from where, why, and that no
    row holds them."""
    lines = []
    for calls in found:
        noted = sum(calls.sites.values())
        if noted < calls.count:  # only the first calls' sites were noted: their counts would read as the total
            where = f" at {', '.join(calls.sites)} (where its first {noted:,} calls came from)" if calls.sites else ""
        else:
            where = " at " + ", ".join(f"{site} ({n:,} call{'s' * (n != 1)})" for site, n in calls.sites.items()) \
                if calls.sites else ""
        modules = f" in {', '.join(calls.modules)}" if calls.modules else ""
        lines += ["", *wrapped(f"NOT INSPECTED: {calls.count:,} call{'s' * (calls.count != 1)} of {calls.path}"
                                f"{where}{modules}: {calls.why}, so watch cannot say their backend, "
                                "time or kernels; they are in no row above", width, INDENT)]
    return lines


Reasons = dict[tuple[str, str], tuple[int, ...]]
"""(backend, why not) → the numbers of the rows (from 1) that give that reason."""


def shared_reasons(rows: Sequence[CallRow]) -> Reasons:
    """Why-not reasons more than one row gives alike (on the CPU: cuDNN and Mem-efficient have no CPU
    implementation), with the rows that give them: said once under the table, not in each row's details."""
    given: Reasons = {}
    for i, row in enumerate(rows):
        for name, reason in row.why_not.items():
            given[name, reason] = (*given.get((name, reason), ()), i + 1)
    return {key: numbers for key, numbers in given.items() if len(numbers) > 1}


def row_numbers(numbers: Sequence[int], rows: int) -> str:
    """``every call above``, ``calls 2-5``, ``calls 1, 3 and 4``."""
    if len(numbers) == rows:
        return "every call above"
    if list(numbers) == list(range(numbers[0], numbers[-1] + 1)):
        return f"calls {numbers[0]}-{numbers[-1]}" if len(numbers) > 2 else f"calls {numbers[0]} and {numbers[-1]}"
    return "calls " + ", ".join(str(n) for n in numbers[:-1]) + f" and {numbers[-1]}"


def shared_reasons_lines(shared: Reasons, rows: int, width: int) -> list[str]:
    by_rows: dict[tuple[int, ...], list[tuple[str, str]]] = {}
    for key, numbers in shared.items():
        by_rows.setdefault(numbers, []).append(key)
    lines = []
    for numbers, reasons in by_rows.items():
        lines.append(f"why not, for {row_numbers(numbers, rows)}:")
        lines += [line for name, reason in reasons
                  for line in wrapped(f"{INDENT}{backend_label(name)}: {reason}", width, INDENT + "  ")]
    return lines


def sites_text(row: CallRow) -> str:
    """Every site and its calls, a file named once: ``train.py:57 (8 calls), :61 (8 calls)``."""
    parts, last = [], None
    for site, n in row.sites or ((row.site, row.count),):
        file, _, line = site.rpartition(":")
        where = f":{line}" if file and file == last else site
        last = file
        parts.append(f"{where} ({'~' if row.sites_sampled else ''}{n:,} call{'s' * (n != 1)})")
    return ", ".join(parts) + ("; calls per site estimated from sampled calls" if row.sites_sampled else "")


def details_lines(i: int, row: CallRow, advice: SignatureAdvice | None, report: WatchReport,
                  shared: Reasons, width: int) -> list[str]:
    """Row ``i``'s block: its signature in full, then a labelled line per fact, wrapped under its label."""
    lines = wrapped(f"{i + 1:>2}  {heading(row)}", width, INDENT)
    last = None
    for label, text in details_facts(row, shared):  # a label said once over the lines it heads
        shown, last = ("" if label == last else label), label
        lines += wrapped(f"{INDENT}{shown:<{LABEL_WIDTH}} {text}", width, INDENT + " " * (LABEL_WIDTH + 1))
    return lines + [line for text in more_lines(row, advice) for line in wrapped(INDENT + text, width, INDENT + "  ")]


def heading(row: CallRow) -> str:
    return row.signature.describe() + (" (compiled)" if row.compiled else "")


def details_facts(row: CallRow, shared: Reasons) -> list[tuple[str, str]]:
    """(label, text) of each fact of a row's details: sites, modules, backend and why not the others (but the
    reasons every row shares), times, kernels, backward, GPU share, the output check."""
    facts: list[tuple[str, str]] = [("sites" if len(row.sites) > 1 else "site", sites_text(row))]
    if row.modules or row.module:
        facts.append(("modules", ", ".join(row.modules) or row.module or ""))
    facts.append(("backend", backend_label(row.backend) if row.backend else f"none: {row.choice_error}"))
    own = [f"{backend_label(name)}: {reason}" for name, reason in row.why_not.items() if (name, reason) not in shared]
    facts += [("why not", text) for text in own]
    forward = summary_cell(row.kernel_us) or summary_cell(row.host_us)
    if forward:
        facts.append(("forward", forward + (" kernels" if row.kernel_us else " host clock")))
    if row.first_call_us is not None:
        facts.append(("first call", f"{duration(row.first_call_us)} host (plan building, autotuning; not in the median)"))
    if row.kernels:
        facts.append(("kernels", ", ".join(short_name(k) for k in row.kernels)))
    if row.backward is not None:
        back = row.backward
        facts.append(("backward", f"{backend_label(back.backend) if back.backend else '?'} "
                                  f"{summary_cell(back.kernel_us) or 'not profiled yet'}"
                                  + (f"; kernels {', '.join(short_name(k) for k in back.kernels)}" if back.kernels
                                     else "")))
    if row.share_of_gpu is not None:
        facts.append(("GPU share", f"{row.share_of_gpu:.1%} of the program's GPU time in the profiled windows"))
    lead = host_lead_text(row)
    if lead:
        facts.append(("host lead", lead))
    check = check_fact(row)
    if check:
        facts.append(("check", check))
    return facts


def more_lines(row: CallRow, advice: SignatureAdvice | None) -> list[str]:
    """A compiled row's graph against its eager twin, a distributed row's ranks, how code that leaves SDPA was judged
    in this program, a compiled call's measured cost."""
    more = [*compiled_lines(row), *per_rank_lines(row), *gradient_text.row_lines(row)]
    if advice is not None:
        more += [f"{backend_label(a.backend)}: {a.judged}" for a in advice.alternatives if a.judged]
    if advice is not None and advice.compiled_cost is not None:
        more += cost_lines(advice.compiled_cost)
    return more


def host_lead_text(row: CallRow) -> str:
    """How far ahead of the GPU the host made the call (read after the profiler's windows) and launched its backward
    (in them, where the profiler slows the host): the room the program's host has at this call for code that costs
    it more (``advice.host_room``); "" where none was read. Where batches were read whole (outside the windows, their
    backwards too), their leads, first to last call."""
    batch = typical_batch(row.lead_batches)
    if batch is not None:
        read = batch.forward + batch.backward
        text = f"forward {_span(batch.forward)}" + (f", backward {_span(batch.backward[::-1])}" if batch.backward else "")
        waited = sum(x < WAITED_US for x in read)
        return (f"{text} ahead of the GPU over the {len(batch.forward)} calls of a batch (medians of {batch.batches} "
                "batch(es) read whole)" + (f"; under {WAITED_US:.0f} µs at {waited} of {len(read)}: the GPU "
                                            "waited for the host there" if waited else ""))
    back = row.backward.lead_us if row.backward else None
    leads = [(name, s) for name, s in (("forward", row.lead_us), ("backward (profiled)", back)) if s]
    if not leads:
        return ""
    parts = [f"{name} {duration(s.median)}" + (f" (p10 {duration(s.p10)})" if s.p10 is not None else "")
             for name, s in leads]
    waited = any(s.median < WAITED_US for _, s in leads)
    return ", ".join(parts) + " ahead of the GPU" + (
        f"; under {WAITED_US:.0f} µs (a launch's latency): the GPU waited for the host there" if waited else "")


def _span(leads: tuple[float, ...]) -> str:
    """The first call's lead → the last's, as a batch's calls made them."""
    return f"{duration(leads[0])} → {duration(leads[-1])}"


def check_fact(row: CallRow) -> str:
    c = row.check
    if c is None or (not c.samples and not c.note):
        return ""
    if c.ok is False:
        return "FAILED: " + (f"{c.nonfinite} of {c.samples} outputs held NaN or Inf" if c.nonfinite else
                             f"max rel err {c.max_rel_error:.1e} above its tolerance {c.tolerance:.0e}") + (
            f" ({c.note})" if c.note else "")
    if not c.samples:
        return c.note
    return f"{c.samples} output(s) against float64 MATH, max rel err {c.max_rel_error:.1e}, within {c.tolerance:.0e}"


# -- Markdown ------------------------------------------------------------------------------------------------------
def report_markdown(report: WatchReport) -> str:
    """The same report as Markdown: the table (every cell whole), then each row's details as a list."""
    lines = [f"## SDPA calls of `{' '.join(report.program)}`", "", summary_line(report) +
             (f"; {clock_line(report)}" if report.rows else ""), ""]
    if report.rows:
        cols = columns(report)
        lines += ["| " + " | ".join(c.heading for c in cols) + " |",
                  "|" + "|".join("---:" if c.right else "---" for c in cols) + "|"]
        lines += ["| " + " | ".join(_cell(c.cell(i, row)) for c in cols) + " |" for i, row in enumerate(report.rows)]
        marks = legend(report)
        lines += ["", marks] if marks else []
    lines += [line.strip() for line in uninspected_lines(report.uninspected, 10_000)]
    shared = shared_reasons(report.rows)
    lines += ["", *(line if line.startswith("why not") else f"- {line.strip()}"
                    for line in shared_reasons_lines(shared, len(report.rows), 10_000))] if shared else []
    for i, row in enumerate(report.rows):
        lines += ["", f"### {i + 1}. `{heading(row)}`", ""]
        lines += [f"- **{label}** {text}" for label, text in details_facts(row, shared)]
        lines += [f"- {text}" for text in more_lines(row, advice_of(report, i))]
    notes = footnotes(report)
    if notes:
        lines += ["", *(f"- {note}" for note in notes)]
    if report.error:
        lines += ["", "The program raised:", "", "```", report.error.rstrip(), "```"]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
