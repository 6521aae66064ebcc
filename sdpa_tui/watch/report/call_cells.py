"""The cells and lines of a watched call that the headless report (``report_text.py``) and the live Calls view share:
plain text, no widgets."""

from __future__ import annotations

from ...core.calls.compiled_twins import graph_backend, mask_words
from ...core.calls.watch_report import (
    CONTENDED_MARK,
    KERNEL_CLOCK,
    NOT_INTERCEPTED_NOTE,
    CallRow,
    WatchReport,
    backend_label,
)
from ...core.stats import Summary
from ...core.traces.kernel_short_names import short_name
from ...core.units import duration
from . import gradient_text

DECOMPOSED = "in the graph's kernels"
"""A compiled row whose MATH the compiler decomposed: its time is in the graph's own kernels, not separable."""


def summary_cell(summary: Summary | None) -> str:
    if summary is None:
        return ""
    return f"{duration(summary.median)} (p90 {duration(summary.p90)}, n={summary.count})"


def time_cell(row: CallRow) -> str:
    """The forward's own time per call: its kernels (CUPTI) on CUDA, the host's clock on the CPU."""
    if row.kernel_us is not None:
        return f"{duration(row.kernel_us.median)} kernels"
    if row.host_us is not None:
        return f"{duration(row.host_us.median)} cpu"
    if row.decomposed:
        return DECOMPOSED
    if row.signature.device.startswith("cuda"):
        return "not profiled yet"
    return "—"


def backward_cell(row: CallRow) -> str:
    back = row.backward
    if back is None:
        return "—" if not row.signature.grad else DECOMPOSED if row.decomposed else "not profiled yet"
    label = backend_label(back.backend) if back.backend else "?"
    return f"{label} {duration(back.kernel_us.median)}" if back.kernel_us else label


def first_call_cell(row: CallRow) -> str:
    return f"{duration(row.first_call_us)} host" if row.first_call_us is not None else "—"


def count_cell(row: CallRow) -> str:
    return f"{row.count:,}" if row.count_exact else f"~{row.count:,}"


def backend_cell(row: CallRow) -> str:
    if not row.compiled:
        return backend_label(row.backend) if row.backend else f"none: {row.choice_error}"
    eager = backend_label(row.eager_backend) if row.eager_backend else None
    if row.backend is None:
        return f"{eager} (compiled; as eager picks, not profiled yet)" if eager else "compiled: not profiled yet"
    if row.decomposed:
        return f"{backend_label(row.backend)} (compiled, decomposed)"
    picked = f"{backend_label(row.backend)} (compiled)"
    return picked if eager in (None, backend_label(row.backend)) else f"{picked}; eager picks {eager}"


def compiled_lines(row: CallRow) -> list[str]:
    """A compiled row: what the graph runs, and beside it the eager calls of the same modules where they differ
    (another backend or mask: pytorch#177712), with each side's measured time per call."""
    if not row.compiled:
        return []
    lines = []
    if row.decomposed:
        lines.append("the compiler traced SDPA's MATH choice into its own matmul and softmax kernels: no SDPA kernel "
                     "runs, so its time is not separable from the graph's")
    twin = row.eager_twin
    if twin is None:
        return lines

    def timed(fwd: float | None, bwd: float | None) -> str:
        if fwd is None:
            return ""
        return f", {duration(fwd)} forward" + (f" + {duration(bwd)} backward" if bwd else "") + " a call"

    graph = backend_label(graph_backend(row)) + (
        ", decomposed" if row.decomposed else " (as eager picks for its arguments; not profiled yet)"
        if row.backend is None else "")
    lines.append(f"eager calls of the same modules ({twin.site}): mask {twin.mask}, {backend_label(twin.backend)}"
                 f"{timed(twin.kernel_us, twin.backward_us)}")
    ours = None if row.decomposed or row.kernel_us is None else row.kernel_us.median
    lines.append(f"this graph: mask {mask_words(row.signature)}, {graph}{timed(ours, row.backward_us)}")
    if ours is not None and twin.kernel_us is not None:
        lines.append(f"the graph's calls cost {ours - twin.kernel_us:+.1f} µs forward each against eager's")
    if twin.mask == "none" and row.signature.mask != "none":
        lines.append("the graph gets a mask that the eager calls do not pass: the code builds one while Dynamo "
                     "traces it (pytorch#177712)")
    return lines


NO_MODULE = "—"
"""The module cell of a call made outside any ``nn.Module``."""


def modules_cell(row: CallRow) -> str:
    return ", ".join(row.modules) if row.modules else (row.module or NO_MODULE)


def share_cell(row: CallRow) -> str:
    return f"{row.share_of_gpu:.1%}" if row.share_of_gpu is not None else "—"


def kernels_cell(row: CallRow, note: str = "") -> str:
    if row.kernels:
        names = list(dict.fromkeys(short_name(k) for k in row.kernels))
        return ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "")
    if row.decomposed:
        return "the compiler's own (decomposed)"
    return note or ("not profiled yet" if row.signature.device.startswith("cuda") else "—")


def ranks_cell(row: CallRow) -> str:
    """``0-3`` / ``0,2`` and, when a rank stands out, a mark (the note says which and how)."""
    ranks = list(row.ranks)
    if not ranks:
        return "—"
    text = f"{ranks[0]}-{ranks[-1]}" if ranks == list(range(ranks[0], ranks[-1] + 1)) and len(ranks) > 2 else \
        ",".join(map(str, ranks))
    return text + (" !" if row.rank_note else "")


def per_rank_lines(row: CallRow) -> list[str]:
    lines = []
    for rank, cell in row.per_rank.items():
        time = f"{duration(cell.kernel_us.median)} kernels" if cell.kernel_us else (
            f"{duration(cell.host_us.median)} cpu" if cell.host_us else "no time yet")
        backend = backend_label(cell.backend) if cell.backend else "?"
        lines.append(f"rank {rank} ({', '.join(cell.devices)}): {cell.count:,} calls, {backend}, {time}")
    if row.rank_note:
        lines.append(f"ranks differ: {row.rank_note}")
    return lines


def footnotes(report: WatchReport) -> list[str]:
    lines = []
    share = report.sdpa_share_of_gpu
    if share is not None:
        lines.append(f"SDPA took {share:.1%} of the program's GPU time in the profiled windows "
                     f"({report.captures.count} windows, {report.captures.profiled_s:.2f} s profiled)")
    if any(r.kernel_us is not None for r in report.rows):
        lines.append(KERNEL_CLOCK)
    if any(r.time_mark for r in report.rows):
        lines.append(f"{CONTENDED_MARK} measured while "
                     f"{report.contention_seen or 'the host was busy beyond the program'}: those times may read high")
    lines.extend(check_lines(report))
    lines.extend(gradient_text.report_lines(report))
    lines.extend(advice_lines(report))
    if report.environment is not None and report.environment.notes():
        lines.append("dispatch environment at start: " + "; ".join(report.environment.notes()))
    captures = report.captures
    if captures.untimed:
        lines.append(f"{captures.untimed} profiler window(s) came back with GPU records untimed: their calls are "
                     "left out")
    if captures.no_gpu:
        lines.append(f"{captures.no_gpu} profiler window(s) saw the SDPA calls but no GPU activity")
    lines.extend(f"profiler window failed: {failure}" for failure in captures.failures)
    if report.compiled:
        lines.append(f"compiled: {', '.join(report.compiled)} — {NOT_INTERCEPTED_NOTE}")
    if not report.rows:
        lines.append("no SDPA call was seen")
    return lines


def advice_lines(report: WatchReport) -> list[str]:
    """The run's advice: SDPA's time in the lab, what the top changes save, and their code."""
    run = report.run_advice
    if run is None:
        return []
    lines = []
    if run.top:
        lines.append(f"advice: SDPA took {run.sdpa_us / 1e3:.2f} ms over the run at the lab's times; "
                     f"the changes below save {run.saving_us / 1e3:.2f} ms ({run.saving_us / run.sdpa_us:.0%})"
                     if run.sdpa_us else "advice:")
        for item in run.top:
            to = item["to"] if item["variant"] == "backend" else f"{item['variant']} ({item['to']})"
            batch = ""
            if item.get("per_batch_us") is not None:
                batch = (f" (its once-per-batch part, {duration(item['per_batch_us'])}, counted once per "
                         f"{item['calls_per_batch']} call(s): one per module on one mask)")
            lines.append(f"  {item['signature']}: {item['from']} → {to}, "
                         f"{duration(item['saving_us_per_call'])} per call × {item['count']}{batch}: "
                         + item["code"].replace("\n", "\n      "))
    else:
        lines.append("advice: no signature has a backend faster than the one it ran, beyond noise")
    if report.advice_note:
        lines.append(report.advice_note)
    return lines


def check_lines(report: WatchReport) -> list[str]:
    """The sampled output checks: the signatures that failed (NaN/Inf, or beyond the dtype's tolerance), and how
    many were checked."""
    lines = []
    checked = [r for r in report.rows if r.check and r.check.samples]
    for row in report.rows:
        c = row.check
        if c is None or c.ok is not False:
            continue
        what = (f"{c.nonfinite} of {c.samples} checked outputs held NaN or Inf" if c.nonfinite else
                f"max |out - float64| / max |ref| {c.max_rel_error:.1e} > {c.tolerance:.0e}")
        lines.append(f"OUTPUT CHECK FAILED: {row.signature.describe()} at {row.site} ({row.backend}): {what}"
                     + (f" ({c.note})" if c.note else ""))
    for row in checked:
        c = row.check
        if c.ok is not False and c.masked_rows and c.masked_rows_max:
            lines.append(f"output check: {row.signature.describe()} at {row.site} ({row.backend}): {c.masked_rows:,} "
                         f"query rows had every key masked; the backend wrote values up to {c.masked_rows_max:.3g} "
                         "there, where float64 MATH writes 0 (not compared)")
    if checked and not any(line.startswith("OUTPUT CHECK FAILED") for line in lines):
        lines.append(f"output check: {len(checked)} signature(s), {sum(r.check.samples for r in checked)} output(s) "
                     "compared with float64 MATH, all within tolerance")
    return lines
