"""The sweep as files: the JSON document (``sweep --json``), the CSV rows and the Markdown report."""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
from dataclasses import asdict
from typing import Any

from ...core.installation import VERSION
from ...core.protocol.records import Environment
from ...core.sweep.sweep_findings import pick_findings
from ...core.sweep.sweep_points import Sweep, SweepPoint, clock_of
from ...core.units import us_number
from ..lab.report_tables import environment_line
from .sweep_format import describe_base, fastest_by_length, mib_cell

SCHEMA_VERSION = 2
"""2: ``pick_not_fastest`` (where SDPA's pick is not the fastest) was added."""

CSV_COLUMNS = (
    "seq", "kv_seq", "backend", "status", "reason", "gpu_us", "eager_us", "kernel_us", "peak_mib", "tflops",
    "main_kernel", "error", "grad_error", "nonfinite",
)


def _base_dict(sweep: Sweep, kv_fixed: int | None) -> dict[str, Any]:
    base = sweep.workloads[0].to_dict()
    base["seq"] = None  # swept: see "seqs"
    base["kv_seq"] = kv_fixed  # None: follows seq
    return base


def sweep_dict(
    sweep: Sweep,
    points: list[SweepPoint],
    findings: list[str],
    environment: Environment | None,
    kv_fixed: int | None,
    args: argparse.Namespace | None = None,
    errors: list[str] | None = None,
) -> dict[str, Any]:
    """The document ``sweep --json`` writes."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "sweep",
        "tool": {"name": "sdpa-tui", "version": VERSION},
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "environment": asdict(environment) if environment else None,
        "base_workload": _base_dict(sweep, kv_fixed),
        "seqs": sweep.seqs,
        "kv_seq_follows_seq": kv_fixed is None,
        "enabled": [b.value for b in sweep.enabled],
        "stop_after_oom": sweep.stop_after_oom,
        "duration_s": getattr(args, "duration", None),
        "clock": clock_of(points),
        "points": [p.to_dict() for p in points],
        "crossovers": findings,
        "picks": {str(seq): pick.value for seq, pick in sorted(sweep.picks.items())},
        "pick_not_fastest": sweep.not_fastest_dicts(),
        "pick_findings": pick_findings(sweep),
        "stopped": sweep.stopped or None,
        "engine_errors": list(errors or []),
    }


def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list):
        return " ".join(value)
    return value


def sweep_csv(points: list[SweepPoint]) -> str:
    """One row per (length, backend)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for p in points:
        d = p.to_dict()
        writer.writerow([_csv_value(d[c]) for c in CSV_COLUMNS])
    return buffer.getvalue()


def sweep_markdown(
    sweep: Sweep, points: list[SweepPoint], findings: list[str], environment: Environment | None, kv_fixed: int | None
) -> str:
    clock = clock_of(points)
    gpu = clock == "GPU/call"
    with_memory = {p.backend for p in points if p.peak_mib is not None}
    headers = ["seq"]
    for b in sweep.enabled:
        headers.append(f"{b.label} {clock} µs")
        if b in with_memory:
            headers.append(f"{b.label} peak MiB")
    by = {(p.seq, p.backend): p for p in points}
    fastest = fastest_by_length(points)
    out = [
        f"# SDPA sweep · {describe_base(sweep.workloads[0], kv_fixed)}",
        "",
        environment_line(environment),
        "",
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---:" for _ in headers) + "|",
    ]
    for seq in sweep.seqs:
        cells = [str(seq)]
        for b in sweep.enabled:
            p = by.get((seq, b))
            if p is None:
                cells.append("")
            elif p.ran:
                text = us_number(p.gpu_us if gpu else p.eager_us)
                cells.append(f"**{text}**" if fastest.get(seq) == b else text)
            else:
                cells.append(p.status_text.replace("|", "\\|"))
            if b in with_memory:
                cells.append(mib_cell(p.peak_mib) if p is not None and p.ran else "")
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "Bold: fastest at that length. Medians; " + (
        "GPU/call is device time per call from CUDA graph replay." if gpu
        else "eager/call is a host-timed back-to-back loop (the CPU has no GPU clock)."), ""]
    if findings or sweep.stopped:
        out += ["## Crossovers and limits", ""]
        out += [f"- {line}" for line in findings]
        if sweep.stopped:
            out.append(f"- The sweep {sweep.stopped}")
        out.append("")
    picks = pick_findings(sweep)
    if picks:
        out += ["## SDPA's pick", ""] + [f"- {line}" for line in picks] + [""]
    return "\n".join(out)
