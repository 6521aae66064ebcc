"""The gradient check in words, for the report, the Calls view and ``--fail-on-nonfinite``."""

from __future__ import annotations

from ...core.calls.gradient_check import TOLERANCE, GradientCheck, replay_advice
from ...core.calls.watch_report import CallRow, WatchReport

FAILED = "GRADIENT CHECK FAILED"


def tolerances() -> str:
    return ", ".join(f"{d.removeprefix('torch.').replace('float', 'fp').replace('bfp', 'bf')} {t:.0e}"
                     for d, t in TOLERANCE.items() if d != "torch.float64")


def backward_check(row: CallRow) -> GradientCheck | None:
    return row.check.backward if row.check is not None else None


def replay_line(check: GradientCheck) -> str:
    parts = [f"{r.backend} {r.result}" + (f" ({r.detail})" if r.detail and not r.clean else "")
             + (f" {r.us:,.1f} µs" if r.us is not None else "") for r in check.replays]
    return "replayed on the call's own tensors (forward+backward): " + "; ".join(parts)


def row_lines(row: CallRow) -> list[str]:
    """The selected call's gradient lines (empty when its calls record no autograd)."""
    c = backward_check(row)
    if c is None:
        return []
    backend = row.backward.backend if row.backward and row.backward.backend else row.backend
    lines = [f"gradients ({backend or '?'} backward): {c.summary()}"]
    if c.replays:
        lines.append(replay_line(c))
        if c.ok is False:
            lines.append("advice: " + replay_advice(c.replays, backend))
    if c.repro:
        lines.append(f"repro: {c.repro} (python {c.repro}/repro.py; sdpa-tui report --inputs {c.repro})")
    return lines


def report_lines(report: WatchReport) -> list[str]:
    """Every signature whose gradients were flagged, with its replays, advice and repro; then one summary line."""
    lines: list[str] = []
    checked = [(row, c) for row in report.rows if (c := backward_check(row)) is not None and c.samples]
    for row, c in checked:
        if c.ok is False:
            lines.append(f"{FAILED}: {row.signature.describe()} at {row.site}")
            lines.extend(f"  {line}" for line in row_lines(row))
        elif c.blame:
            lines.append(f"gradients: {row.signature.describe()} at {row.site}: {c.summary()}")
    if checked and not any(c.ok is False for _, c in checked):
        samples = sum(c.samples for _, c in checked)
        compared = sum(c.compared for _, c in checked)
        lines.append(f"gradient check: {len(checked)} signature(s), {samples} backward(s) sampled, {compared} compared "
                     f"with float64 math, the backends' gradients finite and within tolerance ({tolerances()})")
    return lines


def nonfinite_found(report: WatchReport) -> list[str]:
    """What ``--fail-on-nonfinite`` fails on: every signature whose outputs or gradients held NaN or Inf."""
    found = []
    for row in report.rows:
        c = row.check
        if c is None:
            continue
        if c.nonfinite:
            found.append(f"{row.signature.describe()} at {row.site}: {c.nonfinite} output(s) held NaN or Inf")
        b = c.backward
        if b is not None and b.blame:
            found.append(f"{row.signature.describe()} at {row.site}: gradients non-finite ({b.blame})")
    return found
