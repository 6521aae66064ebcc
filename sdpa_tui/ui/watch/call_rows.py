"""What the Calls view writes for a watched call: the table's cells and the detail pane's text.

Plain strings only (no widgets), so the view's tests read what the user reads.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ...core.backends import ALL_BACKENDS
from ...core.calls.advice import SignatureAdvice
from ...core.calls.call_signature import dtype_name
from ...core.calls.compiled_twins import cost_lines
from ...core.calls.watch_report import NOT_INTERCEPTED_NOTE, CallRow, WatchReport, backend_label
from ...core.calls.watched_calls import CPU_KERNELS_NOTE, INSIDE_CPP, NESTED_SHAPES, OutputCheck, UninspectedCalls
from ...core.traces.kernel_short_names import short_name
from ...core.units import duration
from ...watch.report import gradient_text
from ...watch.report.call_cells import (
    NO_MODULE,
    backend_cell,
    backward_cell,
    compiled_lines,
    count_cell,
    first_call_cell,
    kernels_cell,
    modules_cell,
    per_rank_lines,
    share_cell,
    summary_cell,
    time_cell,
)

COLUMNS: tuple[tuple[str, str], ...] = (
    ("site", "site"), ("count", "count"), ("backend", "backend"), ("time", "fwd time"), ("best", "best (b)"),
    ("saving", "saving/call"), ("module", "module"), ("q", "q shape"), ("kv", "kv shape"), ("dtype", "dtype"),
    ("mask", "mask"), ("causal", "causal"), ("rate", "calls/s"), ("share", "GPU share"), ("backward", "bwd time"),
    ("first", "first call"), ("kernels", "kernels"),
)
"""(key, heading) of each column of the Calls table, in the order a user reads them: where the call is, how often it
ran, what ran it, what it cost, what would be better; then what it is."""
RIGHT_ALIGNED = frozenset({"count", "rate", "share", "time", "backward", "first", "saving"})
LEADING = ("site", "count", "backend", "time", "best", "saving")
"""The columns left of the module: always on screen at 80 columns (their cells are kept short)."""
SITE_WIDTH = 22
BACKEND_WIDTH = 22
"""The longest site and backend cells (elided; the selected-call panel has them whole)."""
MODULE_WIDTH = (8, 60)
"""The module column's narrowest and widest: between them, what the terminal leaves after the leading columns."""
CELL_PADDING = 2
"""A DataTable column's padding (one cell each side)."""


def elide_middle(text: str, width: int) -> str:
    """``model.layers.{0-15}.self_attn, transformer.h.{0-11}.attn`` → ``model.layers.{0…h.{0-11}.attn``: both
    ends kept (the model and the layer), the middle given up."""
    if len(text) <= width:
        return text
    if width < 3:
        return text[:width]
    head = width // 2
    tail = width - 1 - head
    return text[:head] + "…" + text[len(text) - tail:]


def elide_end(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def shown_columns(cells: Iterable[dict[str, str]]) -> tuple[tuple[str, str], ...]:
    """:data:`COLUMNS` less those that would say nothing in any row: ``saving/call`` until advice was measured
    (``best (b)`` stays, naming its key), ``module`` where no call came from an ``nn.Module``. What they leave goes
    to the call's shapes at 80 columns."""
    cells = list(cells)
    empty = {key for key in ("saving", "module") if all(c[key] in ("", NO_MODULE) for c in cells)}
    return tuple((key, heading) for key, heading in COLUMNS if key not in empty)


def module_width(cells: Iterable[dict[str, str]], table_width: int) -> int:
    """The module column's width: what ``table_width`` leaves after the leading columns' widest cells (headings
    included), within :data:`MODULE_WIDTH`."""
    cells = list(cells)
    leading = [(key, heading) for key, heading in shown_columns(cells) if key in LEADING]
    used = sum(max([len(heading), *(len(c[key]) for c in cells)]) for key, heading in leading)
    used += CELL_PADDING * (len(leading) + 1)
    narrowest, widest = MODULE_WIDTH
    return max(narrowest, min(widest, table_width - used))


def shape(dims: tuple[int, ...] | None) -> str:
    return "[" + ",".join(str(d) for d in dims or ()) + "]"


def short_site(site: str) -> str:
    """``path/to/train.py:42`` → ``train.py:42`` (the detail pane keeps the whole path)."""
    return os.path.basename(site) or site


CHECK_FAILED = "✗ "
"""Starts the backend cell of a row whose sampled output or gradient check failed (drawn in red)."""


def check_lines(row: CallRow) -> list[str]:
    """The sampled output check of the selected call (``watch/probe/checks/output_check.py``)."""
    c = row.check
    if c is None or (not c.samples and not c.note):
        return []
    if c.ok is False:
        what = (f"{c.nonfinite} of {c.samples} outputs held NaN or Inf" if c.nonfinite
                else f"max rel err {c.max_rel_error:.1e} above its tolerance {c.tolerance:.0e}")
        return [f"check   FAILED: {what}" + (f" ({c.note})" if c.note else "")]
    if not c.samples:
        return [f"check   {c.note}"]
    return [f"check   {c.samples} output(s) vs float64 MATH: max rel err {c.max_rel_error:.1e}, "
            f"within {c.tolerance:.0e}", *masked_rows_lines(c)]


def masked_rows_lines(c: OutputCheck) -> list[str]:
    """Query rows with every key masked are not compared: say how many, and what the backend wrote there."""
    if not c.masked_rows:
        return []
    return [f"        {c.masked_rows:,} query rows had every key masked (not compared): "
            f"|out| up to {c.masked_rows_max or 0:.3g} there, float64 MATH writes 0"]


def best_cells(advice: SignatureAdvice | None) -> tuple[str, str]:
    """The ``best`` and ``saving/call`` cells: empty until advice was measured (``b``), a dash when nothing beat
    what ran."""
    if advice is None:
        return "", ""
    if advice.best is None:
        return "—", ""
    best = advice.best
    what = backend_label(best.backend) + ("" if best.variant == "backend" or best.leaves_sdpa else f" ({best.variant})")
    return what, duration(advice.saving_us_per_call)


def alternatives_lines(advice: SignatureAdvice | None, count: int) -> list[str]:
    """The selected call's alternatives, as the lab measured them after the program exited, and the code."""
    if advice is None:
        return []
    named = "GPU/call, the best paced by the host" if advice.clock == "paced" else f"{advice.clock} clock"
    lines = ["", f"alternatives (lab, {named}, measured as {advice.measured_as}):"]
    for a in advice.alternatives:
        clock = a.gpu_us if advice.clock in ("gpu", "paced") else a.eager_us
        shown = duration(clock) if clock is not None or a.eager_us is None else f"{duration(a.eager_us)} eager"
        name = backend_label(a.backend) + ("" if a.variant == "backend" or a.leaves_sdpa else f" via {a.variant}")
        exact = ("" if a.exact else ", changes numerics") + (", leaves SDPA" if a.leaves_sdpa else "")
        err = f", err {a.error:.1e}" if a.error is not None else ""
        first = f", its first call {a.first_call_s:.1f} s (compiling)" if a.first_call_s is not None else ""
        if a.per_batch_us is not None:
            first += (f", with 1/{a.calls_per_batch} of its once-per-batch {duration(a.per_batch_us)} "
                      f"({'one call' if a.calls_per_batch == 1 else f'{a.calls_per_batch} modules'} on one mask)")
        lines.append(f"  {name:<28} {shown:>10}{err}{exact}{first}")
        if a.judged:
            lines.append(f"    {a.judged}")
    if advice.best is not None:
        saving = advice.saving_us_per_call or 0.0
        lines += [f"best    {backend_label(advice.best.backend)}: saves {duration(saving)} per call, "
                  f"{duration(saving * count)} over {count:,} calls",
                  "code    " + advice.best.code.replace("\n", "\n        ")]
    elif advice.note:
        lines.append(f"best    {advice.note}")
    lines += [f"note    {d}" for d in advice.differences]
    if advice.compiled_cost is not None:
        lines += cost_lines(advice.compiled_cost)
    return lines


def table_cells(row: CallRow, kernels_note: str = "", advice: SignatureAdvice | None = None) -> dict[str, str]:
    s = row.signature
    best, saving = best_cells(advice)
    return {
        "site": elide_middle(short_site(row.site), SITE_WIDTH) + (" ⚙" if row.compiled else ""),
        "module": modules_cell(row),
        "q": shape(s.q_shape),
        "kv": shape(s.kv_shape),
        "dtype": dtype_name(s.dtype),
        "mask": s.mask,
        "causal": "yes" if s.causal else "",
        "count": count_cell(row),
        "rate": f"{row.calls_per_s:,.1f}" if row.calls_per_s else "—",
        "share": share_cell(row),
        "backend": (CHECK_FAILED if row.check and row.check.failed else "")
        + elide_end(backend_cell(row) if row.backend or row.compiled else "none", BACKEND_WIDTH),
        "time": time_cell(row) + row.time_mark,
        "backward": backward_cell(row),
        "first": first_call_cell(row),
        "kernels": kernels_cell(row, "— (CPU)" if kernels_note == CPU_KERNELS_NOTE else kernels_note),
        "best": best,
        "saving": saving,
    }


NOT_INSPECTED = {INSIDE_CPP: "not seen (C++)", NESTED_SHAPES: "not seen (nested)"}
"""The backend cell of calls counted but not inspected, by why, where watch cannot see which backend ran."""


def uninspected_cells(calls: UninspectedCalls) -> dict[str, str]:
    """A row for calls no probe could inspect: where they came from and how many, the rest unknown."""
    site = next(iter(calls.sites), "")
    return {key: "" for key, _ in COLUMNS} | {
        "site": elide_middle(short_site(site), SITE_WIDTH) + (" +" if len(calls.sites) > 1 else ""),
        "count": f"{calls.count:,}", "backend": NOT_INSPECTED.get(calls.why, "not seen"), "time": "—",
        "module": ", ".join(calls.modules),
    }


def uninspected_detail(calls: UninspectedCalls) -> list[str]:
    noted = sum(calls.sites.values())
    sites = [f"site    {site} ({n:,} call{'s' * (n != 1)})" for site, n in calls.sites.items()]
    if noted < calls.count:  # only the first calls' sites were noted
        sites = [f"site    {site}" for site in calls.sites] + [f"        (where its first {noted:,} calls came from)"]
    return [
        f"{calls.count:,} call{'s' * (calls.count != 1)} of {calls.path}",
        *sites,
        *([f"modules {', '.join(calls.modules)}"] if calls.modules else []),
        "", *([f"{NESTED_SHAPES}: their backend, time, kernels and checks are unseen."] if calls.why == NESTED_SHAPES
              else ["SDPA runs inside C++ there, never through the Python function watch intercepts: its backend, "
                    "time, kernels and checks are unseen. Autograd on (training) or train() mode takes the Python "
                    "path, which watch sees."]),
    ]


def flags_line(flags: tuple[str, ...]) -> str:
    if not flags or set(flags) >= {b.value for b in ALL_BACKENDS}:
        return "every backend enabled (no sdpa_kernel context, no flag switched off)"
    off = [backend_label(b.value) for b in ALL_BACKENDS if b.value not in flags]
    return f"only {', '.join(backend_label(f) for f in flags)} enabled (off: {', '.join(off)})"


def detail_lines(row: CallRow, report: WatchReport) -> list[str]:
    """The selected call, in full: why not each other backend (torch's words), the flags in force."""
    s = row.signature
    checks = check_lines(row) + gradient_text.row_lines(row)
    failed = bool(row.check and row.check.failed)
    lines = [
        s.describe(),
        *(checks if failed else []),  # what went wrong first, above the fold
        f"site    {row.site}",
        f"modules {modules_cell(row) if row.modules or row.module else '— (not called from an nn.Module)'}",
        f"device  {s.device} · dropout_p {s.dropout_p:g} · scale {'default' if s.scale is None else f'{s.scale:g}'}"
        f" · gqa {'yes' if s.gqa else 'no'} · autograd {'records it (training)' if s.grad else 'off'}",
    ]
    if s.mask != "none":
        lines.append(f"mask    {s.mask} {shape(s.mask_shape)}")
    if row.compiled:
        lines += ["", f"compiled  in {row.compiled_fn or '?'}: {count_cell(row)} calls counted from the graph's runs",
                  f"backend   {backend_cell(row)}", *compiled_lines(row)]
    else:
        chosen = backend_label(row.backend) if row.backend else f"none: {row.choice_error}"
        lines += ["", f"SDPA chose {chosen}"]
    for name, reason in row.why_not.items():
        lines.append(f"  why not {backend_label(name)}: {reason}")
    lines += ["", f"flags   {flags_line(s.flags)}"]
    if s.priority:
        lines.append(f"order   {' > '.join(backend_label(p) for p in s.priority)}")
    forward = summary_cell(row.kernel_us) or summary_cell(row.host_us) or time_cell(row)
    clock = "kernels (CUPTI)" if row.kernel_us else ("host clock" if row.host_us else "")
    lines.append(f"forward {forward} {clock}".rstrip())
    lines.append(f"kernels {', '.join(short_name(k) for k in row.kernels) or kernels_cell(row, report.kernels_note)}")
    if row.backward is not None:
        back = row.backward
        lines.append(f"backward {backend_label(back.backend) if back.backend else '?'} "
                     f"{summary_cell(back.kernel_us) or 'time not profiled yet'}")
        lines.append(f"  kernels {', '.join(short_name(k) for k in back.kernels) or '—'}")
    lines += contention_lines(row)
    if row.first_call_us is not None:
        lines.append(f"first call {first_call_cell(row)} (plan building, autotuning; not in the median)")
    if not failed:
        lines += checks
    if row.share_of_gpu is not None:
        lines.append(f"share   {share_cell(row)} of the program's GPU time in the profiled windows")
    if row.per_rank:
        lines += ["", *per_rank_lines(row)]
    elif row.pids and len(row.pids) > 1:
        lines.append(f"pids    {', '.join(str(p) for p in row.pids)}")
    if report.compiled:
        lines += ["", f"compiled: {', '.join(report.compiled)}", NOT_INTERCEPTED_NOTE]
    return lines


def contention_lines(row: CallRow) -> list[str]:
    if not row.contended_calls:
        return []
    share = row.contended_calls / row.count if row.count else 0.0
    return [f"busy    {row.contended_calls:,} of its {row.count:,} calls ({share:.0%}) ran while the host was busy "
            f"beyond the program" + (f": its times may read high ({row.time_mark} in the table)" if row.time_mark else "")]


def program_state(report: WatchReport, exit_code: int | None, stopped: bool) -> str:
    """One line: running for how long, or how it ended."""
    calls = sum(r.count for r in report.rows)
    seen = f"{len(report.rows)} signature{'s' * (len(report.rows) != 1)}, {calls:,} call{'s' * (calls != 1)}"
    if exit_code is None:
        busy = f" · HOST BUSY beyond the program: {report.contention}" if report.contention else ""
        return f"running {report.duration_s:,.1f} s · {seen}{busy}"
    how = "stopped by sdpa-tui" if stopped else "exited"
    if exit_code < 0:
        return f"{how}: killed by signal {-exit_code} after {report.duration_s:,.1f} s · {seen} (kept)"
    return f"{how} with code {exit_code} after {report.duration_s:,.1f} s · {seen} (kept)"


def traceback_tail(error: str, lines: int = 3) -> str:
    return "\n".join(error.rstrip().splitlines()[-lines:])
