"""The comparison of backends as data: the JSON document and the values every table shows."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from ...core.backends import Backend
from ...core.installation import VERSION
from ...core.lab.faster import describe, how_to
from ...core.lab.report_model import ReportModel
from ...core.lab.session import BackendRow, Session
from ...core.stats import Summary
from ...core.status import Status
from ...core.units import us_number

SCHEMA_VERSION = 2
"""2: ``dispatch.faster`` and ``p10`` in each clock's summary were added."""

STATUS_TEXT = {
    Status.OK: "ok",
    Status.WAITING: "waiting",
    Status.NOT_ELIGIBLE: "not eligible",
    Status.ERROR: "error",
    Status.OOM: "out of memory",
    Status.DISABLED: "off",
}


def fmt_us(summary: Summary | None) -> str:
    return us_number(None if summary is None else summary.median)


def fmt_num(value: float | None, digits: int = 1, suffix: str = "") -> str:
    return "–" if value is None else f"{value:,.{digits}f}{suffix}"


def fmt_tflops(value: float | None) -> str:
    """Three significant digits: 512, 41.3, 0.0172 (CPU shapes are small)."""
    return "–" if value is None else f"{value:.3g}"


def fmt_error(value: float | None) -> str:
    return "–" if value is None else f"{value:.1e}"


def status_text(row: BackendRow) -> str:
    text = STATUS_TEXT.get(row.status, row.status)
    return f"{text}: {row.reason}" if row.reason and row.status != Status.DISABLED else text


def verdicts(model: ReportModel) -> dict[Backend, list[str]]:
    """What each backend is best at here, derived from the measurements: fastest, leanest, SDPA's pick."""
    session = model.session
    rows = [r for r in model.rows if r.status == Status.OK]
    notes: dict[Backend, list[str]] = {r.backend: [] for r in model.rows}

    def best(key, label: str) -> None:
        candidates = [r for r in rows if key(r) is not None]
        if len(candidates) > 1:
            notes[min(candidates, key=key).backend].append(label)

    best(lambda r: r.gpu_us.median if r.gpu_us else None, "fastest on GPU")
    best(lambda r: r.eager_us.median if r.eager_us else None, "fastest eager")
    best(lambda r: r.peak_mib, "least memory")
    if session.dispatch and session.dispatch.choice:
        notes[session.dispatch.choice].append("SDPA's pick")
    return notes


def how_to_get(session: Session, faster) -> tuple[str, str]:
    """The two ``sdpa_kernel`` lines that get the faster backend (see core.faster.how_to)."""
    d = session.dispatch
    if d is None or d.choice is None:
        return "", ""
    known = {b.value for b in Backend}
    order = [Backend(name) for name in d.priority_order if name in known]
    enabled = set(session.enabled)
    in_order = [b for b in order if b in enabled] + [b for b in session.enabled if b not in order]
    return how_to(faster, d.choice, in_order)


def faster_lines(model: ReportModel) -> list[str]:
    """Whether SDPA's pick is the fastest here, in words; how to get a faster one. [] when unknown."""
    session = model.session
    d = session.dispatch
    if d is None or d.choice is None or session.backends[d.choice].status != Status.OK:
        return []
    faster = model.faster
    if not faster:
        measured = [s for b, s in session.backends.items() if b != d.choice and s.enabled and s.status == Status.OK]
        if not measured:
            return []
        return [f"SDPA's pick {d.choice.label} is the fastest enabled backend here, or within the noise of it"]
    only, priority = how_to_get(session, faster)
    return [describe(f, d.choice) for f in faster] + [f"to get it: {only}  or, keeping fallbacks: {priority}"]


def _summary(summary: Summary | None) -> dict[str, Any]:
    if summary is None:
        return {"median": None, "p10": None, "p90": None, "samples": 0}
    return {"median": summary.median, "p10": summary.p10, "p90": summary.p90, "samples": summary.count}


def backend_dict(row: BackendRow) -> dict[str, Any]:
    return {
        "backend": row.backend.value,
        "enabled": row.enabled,
        "status": row.status,
        "reason": row.reason,
        "details": list(row.details),
        "main_kernel": row.main_kernel_full,
        "main_kernel_short": row.main_kernel,
        "kernels_per_call": row.kernels_per_call,
        "kernel_us": row.kernel_us.median if row.kernel_us else None,
        "gpu_us": row.gpu_us.median if row.gpu_us else None,
        "eager_us": row.eager_us.median if row.eager_us else None,
        "clocks": {"kernel": _summary(row.kernel_us), "gpu": _summary(row.gpu_us), "eager": _summary(row.eager_us)},
        "sm_mhz": {"gpu": row.gpu_sm_mhz, "kernel": row.kernel_sm_mhz},
        "speedup_vs_math": row.speedup_vs_math,
        "tflops": row.tflops,
        "peak_mib": row.peak_mib,
        "pct_of_peak": row.pct_of_peak,
        "max_abs_error": row.max_abs_error,
        "max_rel_error": row.max_rel_error,
        "grad_error": None if row.grad_max_abs is None else dict(zip(("dq", "dk", "dv"), row.grad_max_abs)),
        "grad_rel_error": None if row.grad_max_rel is None else dict(zip(("dq", "dk", "dv"), row.grad_max_rel)),
        "nonfinite": list(row.nonfinite),
        "eligibility": row.eligibility,
        "eligibility_reason": row.eligibility_reason,
        "kernels": [
            {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(kernel).items()} for kernel in row.kernels
        ],
    }


def report_dict(session: Session, packed: Sequence[Any] = ()) -> dict[str, Any]:
    """The document ``report --json`` writes (and snapshots extend)."""
    model = ReportModel.of(session)
    env = session.environment
    dispatch = session.dispatch
    rows, faster = model.rows, model.faster
    picked = next((r for r in rows if dispatch and r.backend == dispatch.choice), None)
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "sdpa-tui", "version": VERSION},
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "environment": asdict(env) if env else None,
        "workload": session.workload.to_dict(),
        "flops_per_call": session.workload.flops,
        "peak_tflops": {dtype: {"tflops": p.tflops, "detail": p.detail} for dtype, p in session.peaks.items()},
        "legacy_api": session.legacy_api,
        "enabled": [b.value for b in session.enabled],
        "backends": [backend_dict(r) for r in rows],
        "dispatch": {
            "choice": dispatch.choice.value if dispatch and dispatch.choice else None,
            "priority_order": list(dispatch.priority_order) if dispatch else [],
            "reason": dispatch.reason if dispatch else "",
            "effective_flags": [b.value for b in dispatch.effective] if dispatch else [],
            "note": dispatch.note if dispatch else "",
            "gpu_us": picked.gpu_us.median if picked and picked.gpu_us else None,
            "eager_us": picked.eager_us.median if picked and picked.eager_us else None,
            "faster": [f.to_dict() for f in faster],
            "faster_how_to": list(how_to_get(session, faster)) if faster else [],
        },
        "verdicts": {b.value: v for b, v in verdicts(model).items()},
        "engine_errors": list(session.errors),
        "incomplete": session.incomplete or None,
        "startup": startup_dict(session),
        "packed_alternatives": [row.to_dict() for row in packed],  # exports/lab/packed_rows.PackedRow
    }


def startup_dict(session: Session) -> dict[str, Any] | None:
    """The engine's start-up phases: when each ended and how long it took, in seconds after the
    engine process was spawned (None from an engine that does not say)."""
    startup = session.startup
    if startup is None:
        return None
    return {
        "complete": startup.complete,
        "phases_end_s": dict(zip(startup.phases, startup.seconds)),
        "phases_took_s": {name: round(took, 6) for name, took in startup.steps()},
    }
