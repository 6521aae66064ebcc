"""A :class:`~.report_diff.Comparison` as a Rich table, as Markdown and as JSON-ready data."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ...core.backends import Backend
from ...core.units import us_number
from .report_diff import BackendChange, ClockChange, Comparison, kernel_text

CLOCK_TITLES = {"kernel": "kernel µs", "gpu": "GPU/call µs", "eager": "eager/call µs"}
COLUMNS = ("backend", "status", "main kernel", *CLOCK_TITLES.values(), "eligibility")
BACKEND_WIDTH = max(len(b.label) for b in Backend)
"""A terminal's backend column: every name whole (``Mem-efficient``)."""


def clock_text(clock: ClockChange) -> str:
    """'8.3 → 8.3 (1.00x)'; '–' when neither side measured it."""
    if clock.a_us is None and clock.b_us is None:
        return "–"
    ratio = f" ({clock.ratio:.2f}x)" if clock.ratio is not None else ""
    return f"{us_number(clock.a_us)} → {us_number(clock.b_us)}{ratio}"


def _pair(values: tuple[str, str], changed: bool | None = None) -> str:
    changed = values[0] != values[1] if changed is None else changed
    return f"{values[0]} → {values[1]}" if changed else values[0]


def eligibility_text(change: BackendChange) -> str:
    text = _pair(change.eligibility, change.eligibility_changed)
    if change.eligibility_changed:
        reason = next((r for r in reversed(change.eligibility_reason) if r), "")
        text += f" ({reason})" if reason else ""
    return text


def _cells(change: BackendChange, terminal: bool = False) -> list[str]:
    """A backend's row; ``terminal``: named as ``report``'s table names it (``Mem-efficient``), else torch's name."""
    status = tuple(s.replace("_", " ") for s in change.status)
    return [
        change.backend.label if terminal else change.backend.value,
        _pair(status),  # type: ignore[arg-type]
        kernel_text(change),
        *(clock_text(c) for c in change.clocks),
        eligibility_text(change),
    ]


def dispatch_text(comparison: Comparison) -> str:
    d = comparison.dispatch
    a, b = (c or "no kernel" for c in d.choice)
    line = f"dispatch: SDPA picks {a} in both" if not d.changed else f"dispatch changed: SDPA picks {a} → {b}"
    for side, faster in zip("AB", d.faster):
        if faster:
            names = ", ".join(f"{f.get('backend')} ({f.get('clock')} {f.get('ratio', 0):.2f}x)" for f in faster)
            line += f"; in {side} faster than the pick: {names}"
    return line


def summary_lines(comparison: Comparison) -> list[str]:
    """Where A and B come from, whether the workloads match, and the verdict."""
    lines = [f"A: {comparison.a.path} · {comparison.a.label}", f"B: {comparison.b.path} · {comparison.b.label}"]
    if comparison.workload_same:
        lines.append(f"workload: {comparison.a.workload}")
    else:
        lines.append(f"workloads differ: A {comparison.a.workload} · B {comparison.b.workload}")
    lines.append(dispatch_text(comparison))
    lines += environment_lines(comparison)
    return lines


def environment_lines(comparison: Comparison) -> list[str]:
    """Where dispatch or a kernel differs: the environment differences that can cause it, most likely first."""
    differs = comparison.dispatch.changed or any(c.kernel_changed for c in comparison.backends)
    if not comparison.environment:
        return ["environments: the same in what both reports recorded"] if differs else []
    head = "what differs in the environment (most likely cause first)" if differs else "environments differ"
    return [f"{head}: {'; '.join(comparison.environment)}"]


def verdict_line(comparison: Comparison) -> str:
    pct = f"{comparison.threshold * 100:g} %"
    slower = comparison.slower()
    if not slower:
        return f"no clock of B is more than {pct} slower than A"
    items = ", ".join(f"{b.short} {c.clock} {c.ratio:.2f}x (+{(c.ratio - 1) * 100:.1f} %)" for b, c in slower)
    return f"slower in B by more than {pct}: {items}"


def comparison_rich(comparison: Comparison) -> Group:
    table = Table(title="SDPA backends, B against A · medians, µs (ratio B/A: above 1 is slower)",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for name in COLUMNS:
        table.add_column(name, justify="right" if name in CLOCK_TITLES.values() else "left",
                         no_wrap=name == "backend", min_width=BACKEND_WIDTH if name == "backend" else None)
    for change in comparison.backends:
        slow = {c.clock for c in change.slower(comparison.threshold)}
        styles = ["", "", "", *("bold red" if c.clock in slow else "" for c in change.clocks), ""]
        table.add_row(*(Text(cell, style=style) for cell, style in zip(_cells(change, terminal=True), styles)))
    lines = [Text(line) for line in summary_lines(comparison)]
    verdict = Text(verdict_line(comparison), style="bold red" if comparison.regressed else "green")
    return Group(*lines, table, verdict)


def comparison_markdown(comparison: Comparison) -> str:
    out = ["# sdpa-tui compare", ""]
    out += [f"- {line}" for line in summary_lines(comparison)]
    out += ["", "| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---:" if c in CLOCK_TITLES.values() else "---"
                                                                  for c in COLUMNS) + "|"]
    for change in comparison.backends:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in _cells(change)) + " |")
    out += ["", f"**{verdict_line(comparison)}**", "",
            "Ratios are B / A of the medians: above 1, B is slower.", ""]
    return "\n".join(out)


def comparison_dict(comparison: Comparison) -> dict[str, Any]:
    def side(s) -> dict[str, Any]:
        return {"path": s.path, "device_name": s.device_name, "torch_version": s.torch_version,
                "cudnn_version": s.cudnn_version, "created": s.created, "workload": s.workload,
                "schema_version": s.schema_version}

    return {
        "kind": "comparison",
        "a": side(comparison.a),
        "b": side(comparison.b),
        "workload_same": comparison.workload_same,
        "threshold": comparison.threshold,
        "dispatch": {"a": comparison.dispatch.choice[0], "b": comparison.dispatch.choice[1],
                     "changed": comparison.dispatch.changed,
                     "faster_a": comparison.dispatch.faster[0], "faster_b": comparison.dispatch.faster[1]},
        "backends": [
            {
                "backend": c.backend.value,
                "status": {"a": c.status[0], "b": c.status[1]},
                "kernel": {"a": c.kernel[0], "b": c.kernel[1], "changed": c.kernel_changed},
                "clocks": {k.clock: {"a_us": k.a_us, "b_us": k.b_us, "ratio": k.ratio,
                                     "slower": k in c.slower(comparison.threshold)} for k in c.clocks},
                "eligibility": {"a": c.eligibility[0], "b": c.eligibility[1], "changed": c.eligibility_changed,
                                "reason_a": c.eligibility_reason[0], "reason_b": c.eligibility_reason[1]},
            }
            for c in comparison.backends
        ],
        "environment_differences": list(comparison.environment),
        "slower": [{"backend": b.value, "clock": c.clock, "ratio": c.ratio} for b, c in comparison.slower()],
        "regressed": comparison.regressed,
    }
