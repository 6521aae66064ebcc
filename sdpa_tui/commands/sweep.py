"""``sdpa-tui sweep``: measure several sequence lengths with one engine, print a table, a chart and the crossovers.

Writes JSON, CSV and Markdown on request. Imports no torch: the engine runs in its own process.
"""

from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console

from ..core.backends import Backend
from ..core.calls.packed_alternative import lab_spec
from ..core.calls.packed_alternative import refusal as packed_refusal
from ..core.lab.session import Session
from ..core.padded_lengths import lengths_for_padding, parse_paddings
from ..core.protocol.records import Environment
from ..core.sweep.sweep_findings import crossovers
from ..core.sweep.sweep_lengths import TIMEOUT_PER_LENGTH_S, parse_seqs, sweep_workloads
from ..core.sweep.sweep_points import ERROR, NOT_ELIGIBLE, OOM, Sweep, SweepPoint
from ..core.workload import Workload, WorkloadError
from ..engine.host.headless import EngineFailed, SeriesProgress, measure_series
from ..engine.host.packed_cost_client import measure_packed
from ..exports.files.atomic import write_text_atomic
from ..exports.lab.packed_rows import packed_rows
from ..exports.lab.report_data import STATUS_TEXT
from ..exports.sweep.padding_sweep import PaddingPoint, padding_dict, padding_table
from ..exports.sweep.sweep_documents import sweep_csv, sweep_dict, sweep_markdown
from ..exports.sweep.sweep_terminal import progress_line, render
from .console_output import print_out, stdout_console
from .exit_codes import EXIT_ENGINE, EXIT_INTERRUPTED, EXIT_NOTHING_MEASURED, EXIT_USAGE


# ------------------------------------------------------------------ the command
def plan(args: argparse.Namespace, workload: Workload) -> list[Workload]:
    """The workloads to measure, from ``--seq`` and ``--kv-seq``; ValueError says what is wrong."""
    text = getattr(args, "sweep_seq", None)
    if text is None:
        raise ValueError(
            "sweep needs --seq after 'sweep': a list of lengths (--seq 128,256,512) "
            "or a range of powers of two (--seq 256:32768)"
        )
    return sweep_workloads(workload, parse_seqs(text), getattr(args, "kv_seq", None))


def padding_plan(args: argparse.Namespace, workload: Workload) -> list[tuple[float, Workload]]:
    """``--padding``'s fractions, each with its padded workload at the one ``--seq`` (the workload's where none)."""
    seqs = parse_seqs(args.sweep_seq) if getattr(args, "sweep_seq", None) else (workload.seq,)
    if len(seqs) != 1:
        raise ValueError(f"--padding sweeps the padding at one length; --seq gives {len(seqs)}")
    if workload.mask not in ("none", "padding"):
        raise ValueError(f"--padding gives a key-padding mask; --mask/--causal ask for {workload.mask}")
    base = workload.with_changes(seq=seqs[0], kv_seq=seqs[0])
    return [(p, base.with_changes(mask="padding", lengths=lengths_for_padding(base.batch, base.seq, p)))
            for p in parse_paddings(args.padding)]


def run_padding_sweep(args: argparse.Namespace, workload: Workload, backends: tuple[Backend, ...]) -> int:
    """SDPA's backends on each padded batch (one engine), then packed attention on each (one child process)."""
    try:
        plan_ = padding_plan(args, workload)
    except (ValueError, WorkloadError) as exc:
        sys.stderr.write(f"sdpa-tui: error: {exc}\n")
        return EXIT_USAGE
    out, err = stdout_console(), Console(stderr=True)
    why = packed_refusal(args.device)
    if why:  # nothing to compare: said in one line before an engine starts
        err.print(f"[bold red]sdpa-tui:[/] packed attention is not measured here: {why}", highlight=False)
        return EXIT_USAGE
    sessions: list[Session] = []
    with err.status("starting the engine", spinner="dots") as status:
        series = measure_series([w for _, w in plan_], backends, args.device, duration_s=args.duration,
                                timeout_s=TIMEOUT_PER_LENGTH_S,
                                on_progress=lambda p: status.update(f"{p.text} · {p.elapsed_s:.0f} s"))
        try:
            sessions = list(series)
        except EngineFailed as exc:
            err.print(f"[bold red]sdpa-tui:[/] the engine failed: {exc}")
            return EXIT_ENGINE
        except KeyboardInterrupt:
            err.print("[bold red]sdpa-tui:[/] interrupted")
            return EXIT_INTERRUPTED
        finally:
            series.close()
        status.update("measuring packed attention on the real tokens")
        answers = measure_packed([lab_spec(w, args.device) for _, w in plan_], TIMEOUT_PER_LENGTH_S * len(plan_))
    points = [PaddingPoint(p, session, tuple(packed_rows(answer)))
              for (p, _), session, answer in zip(plan_, sessions, answers)]
    print_out(out, padding_table(points))
    if getattr(args, "json", None):
        try:
            write_text_atomic(args.json, json.dumps(padding_dict(points), indent=2) + "\n")
            err.print(f"wrote {args.json}", highlight=False)
        except OSError as exc:
            err.print(f"[bold red]sdpa-tui: could not write {args.json}:[/] {exc.strerror or exc}", highlight=False)
            return EXIT_ENGINE
    return 0


def run_sweep(args: argparse.Namespace, workload: Workload, backends: tuple[Backend, ...]) -> int:
    if getattr(args, "padding", None) is not None:
        return run_padding_sweep(args, workload, backends)
    try:
        workloads = plan(args, workload)
    except ValueError as exc:
        sys.stderr.write(f"sdpa-tui: error: {exc}\n")
        return EXIT_USAGE
    sweep = Sweep(workloads, backends, stop_after_oom=getattr(args, "stop_after_oom", True))
    kv_fixed = getattr(args, "kv_seq", None)
    out = stdout_console()
    err = Console(stderr=True)
    environment: Environment | None = None
    errors: list[str] = []
    failure = ""
    code = 0
    with err.status("starting the engine", spinner="dots") as status:

        def progress(p: SeriesProgress) -> None:
            if not p.ready:
                status.update(f"{p.text} · {p.elapsed_s:.0f} s")
                return
            status.update(
                f"seq {p.workload.seq} ({p.index + 1}/{p.count}) · {p.text} · "
                f"{p.done_backends}/{p.total_backends} backends done · {p.elapsed_s:.0f} s"
            )

        series = measure_series(
            workloads, sweep.active(), args.device, duration_s=args.duration, on_progress=progress,
            timeout_s=TIMEOUT_PER_LENGTH_S,
            next_enabled=lambda session: sweep.active(),
            legacy_api=getattr(args, "legacy_api", False), priority=tuple(getattr(args, "priority", ()) or ()),
        )
        try:
            for session in series:
                environment = session.environment
                errors.extend(session.errors)
                points = sweep.add(session.rows())
                sweep.note_faster(session.workload.seq, session.dispatch.choice if session.dispatch else None,
                                  session.faster())
                err.print(progress_line(points), highlight=False)
                if session.incomplete:
                    errors.append(f"seq {session.workload.seq}: {session.incomplete}")
                    err.print(f"[yellow]seq {session.workload.seq}: {session.incomplete}[/]", highlight=False)
        except EngineFailed as exc:
            failure = f"the engine failed: {exc}"
            sweep.abort(failure)
            code = EXIT_ENGINE
        except KeyboardInterrupt:
            failure = "interrupted"
            sweep.abort(failure)
            code = EXIT_INTERRUPTED
        finally:
            series.close()  # ends the engine process
    if failure:
        err.print(f"[bold red]sdpa-tui:[/] {failure}")
    if not sweep.measured:
        return code or EXIT_ENGINE
    points = sweep.points()
    findings = crossovers(points)
    print_out(out, render(sweep, points, findings, environment, kv_fixed, out.width))
    documents = (
        ("json", lambda: json.dumps(sweep_dict(sweep, points, findings, environment, kv_fixed, args, errors),
                                    indent=2) + "\n"),
        ("csv", lambda: sweep_csv(points)),
        ("markdown", lambda: sweep_markdown(sweep, points, findings, environment, kv_fixed)),
    )
    for option, make in documents:
        path = getattr(args, option, None)
        if not path:
            continue
        try:
            write_text_atomic(path, make())
            err.print(f"wrote {path}", highlight=False)
        except OSError as exc:
            err.print(f"[bold red]sdpa-tui: could not write {path}:[/] {exc.strerror or exc}", highlight=False)
            code = code or EXIT_ENGINE
    nothing = nothing_measured(points, environment.device if environment else "this device")
    if nothing and not code:  # after the table and the files, which say why no backend ran
        err.print(f"[bold red]sdpa-tui:[/] {nothing}", soft_wrap=True, highlight=False)
        code = EXIT_NOTHING_MEASURED
    return code


def nothing_measured(points: list[SweepPoint], device: str) -> str:
    """The one line of a sweep in which no backend ran at any length ("" where one did): each backend's verdicts
    (the lengths the sweep skipped after them left out)."""
    if any(p.ran for p in points):
        return ""
    said: dict[str, list[str]] = {}
    for p in points:
        verdicts = said.setdefault(p.backend.label, [])
        text = STATUS_TEXT.get(p.status) if p.status in (NOT_ELIGIBLE, OOM, ERROR) else None
        if text and text not in verdicts:
            verdicts.append(text)
    why = ", ".join(f"{label} {' or '.join(v) or 'not measured'}" for label, v in said.items())
    return f"nothing measured: no selected backend ran at any length on {device} ({why or 'no backend selected'})"
