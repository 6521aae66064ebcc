"""Command line: ``sdpa-tui`` (the live monitor) and ``sdpa-tui report`` (headless)."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

from .commands.compare import add_compare_parser
from .commands.devices_option import add_devices_option, resolve_devices
from .commands.exit_codes import EXIT_ENGINE, EXIT_INTERRUPTED, EXIT_NOTHING_MEASURED, EXIT_USAGE
from .commands.metrics_options import add_exporter_options, add_live_metrics_options, check_live_metrics_options
from .core.backends import ALL_BACKENDS, Backend, parse_backend_list, parse_priority
from .core.padded_lengths import lengths_for_padding, parse_lengths, parse_padding
from .core.protocol.engine_commands import ENGINE_MEMORY_MIB
from .core.workload import DIRECTIONS, DTYPES, MASKS, Workload, WorkloadError
from .engine.host.spawned_main import spawn_children_without_the_script
from .exports.files.output_paths import check_output_paths
from .telemetry.device_choice import DEVICE_SPEC, SPEC_HELP, DeviceError, check_device


class _OneLineErrorParser(argparse.ArgumentParser):
    """argparse's own errors (a value that is not a number, an unknown choice) as one line, not
    the usage block; subcommand parsers inherit the class."""

    def error(self, message: str) -> None:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _add_workload_options(parser: argparse.ArgumentParser, inherited: bool = False) -> None:
    """``inherited``: a subcommand's copy of the options. Its defaults are suppressed, or
    argparse would let them overwrite what was given before the subcommand
    (``sdpa-tui --seq 128 report`` measured seq 512)."""
    d = Workload()
    default = (lambda value: argparse.SUPPRESS) if inherited else (lambda value: value)
    g = parser.add_argument_group("workload")
    g.add_argument("--batch", type=int, default=default(d.batch), help=f"batch size (default {d.batch})")
    g.add_argument("--heads", type=int, default=default(d.heads), help=f"query heads (default {d.heads})")
    g.add_argument("--kv-heads", type=int, default=default(None), help="key/value heads, dividing --heads (GQA; default: --heads)")
    g.add_argument("--seq", type=int, default=default(d.seq), help=f"query length (default {d.seq})")
    g.add_argument("--kv-seq", type=int, default=default(None), help="key/value length (default: --seq)")
    g.add_argument("--head-dim", type=int, default=default(d.head_dim), help=f"head dimension (default {d.head_dim})")
    g.add_argument("--dtype", choices=list(DTYPES), default=default(d.dtype), help=f"default {d.dtype}")
    g.add_argument("--causal", action="store_true", default=default(False), help="causal attention (is_causal=True)")
    g.add_argument("--mask", choices=list(MASKS), default=default(None), help="attention mask (default none; --causal means causal)")
    g.add_argument("--direction", choices=list(DIRECTIONS), default=default(d.direction), help=f"forward, or forward+backward (default {d.direction})")
    g.add_argument("--device", default=default("auto"), help=f"{SPEC_HELP}; default auto")
    g.add_argument(
        "--backends", default=default(",".join(b.short for b in ALL_BACKENDS)),
        help="comma list of enabled backends: cudnn,flash,efficient,math (default: all)",
    )
    g.add_argument(
        "--legacy-api", action="store_true", default=default(False),
        help="apply --backends the way torch.backends.cuda.sdp_kernel(enable_flash, enable_math, "
        "enable_mem_efficient) does: it has no cuDNN switch",
    )
    g.add_argument(
        "--priority", default=default(None), metavar="LIST",
        help="a dispatch order to try, e.g. flash,cudnn,efficient,math (sdpa_kernel set_priority=True)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineErrorParser(
        prog="sdpa-tui",
        description="Live monitor of which scaled_dot_product_attention kernel runs, and how fast.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    _add_workload_options(parser)
    parser.add_argument("--export-dir", default="sdpa-tui-exports", help="where snapshots go (default ./sdpa-tui-exports)")
    parser.add_argument(
        "--engine-memory-mib", type=float, default=ENGINE_MEMORY_MIB, metavar="MIB",
        help="replace the engine by a fresh one (history kept) once its host memory grew this much "
        "beyond what each workload's first use loaded "
        f"(default {ENGINE_MEMORY_MIB:g}; 0: never)",
    )
    add_live_metrics_options(parser)
    add_devices_option(parser)
    sub = parser.add_subparsers(dest="command", metavar="{report,sweep,watch,compare,exporter,serve}")
    report = sub.add_parser(
        "report", help="measure for a few seconds and print the comparison table (no UI)",
        description="Measure every enabled backend for a few seconds with one engine process, without a UI; "
        "print the comparison table, SDPA's pick and whether another backend beats it.",
        epilog=f"exit codes: 0 done; {EXIT_ENGINE} the engine failed; {EXIT_USAGE} bad input; {EXIT_NOTHING_MEASURED} "
        "nothing measured: no selected backend ran the workload on this device (each not eligible, out of memory "
        "or failed; the table says why).",
    )
    _add_workload_options(report, inherited=True)
    add_devices_option(report, inherited=True)
    report.add_argument("--duration", type=float, default=3.0, help="seconds to measure once ready (default 3)")
    report.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    report.add_argument("--markdown", metavar="PATH", help="also write the table as Markdown")
    padded = report.add_mutually_exclusive_group()
    padded.add_argument("--lengths", metavar="LIST",
                        help="a padded batch: each sequence's real length (512,384,200); the batch is their count, "
                        "the padded length the longest (or --seq); SDPA runs with their key-padding mask, and packed "
                        "attention (varlen_attn, nested jagged SDPA) on the real tokens is measured beside it")
    padded.add_argument("--padding", metavar="FRACTION",
                        help="a padded batch of --batch sequences of --seq with this share of the keys padding "
                        "(0.25), the lengths drawn deterministically; as --lengths")
    report.add_argument("--inputs", metavar="FOLDER",
                        help="instead of a random workload: a call watch saved (its repro folder), run forward and "
                        "backward on every backend with its own tensors, each result checked and timed")
    _add_sweep_parser(sub)
    add_compare_parser(sub)
    exporter = sub.add_parser(
        "exporter", help="measure continuously without a UI and serve Prometheus metrics on /metrics",
        description="Run the engine as the live monitor does, without a UI, and serve what it measures "
        "(the three clocks per backend, SDPA's pick, eligibility, main kernels, NVML) for Prometheus.",
    )
    _add_workload_options(exporter, inherited=True)
    add_exporter_options(exporter)
    _add_serve_parser(sub)
    sub.add_parser("watch", help="run a Python program and show its SDPA calls: sdpa-tui watch [--report calls.json] -- python x.py",
                   add_help=False)
    return parser


def _add_serve_parser(sub: argparse._SubParsersAction) -> None:
    """``sdpa-tui serve``: the live monitor in a browser; the workload and flags pass through."""
    from .commands.serve import DEFAULT_ADDRESS, DEFAULT_PORT

    serve = sub.add_parser(
        "serve", help="serve the live monitor to a browser (textual-serve), on 127.0.0.1 unless --address",
        description="Serve the live monitor as a web page: each browser tab runs its own monitor and engine.",
    )
    _add_workload_options(serve, inherited=True)
    g = serve.add_argument_group("serve")
    g.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT})")
    g.add_argument(
        "--address", default=DEFAULT_ADDRESS,
        help=f"address to listen on (default {DEFAULT_ADDRESS}: this machine only; reach it with ssh -L)",
    )
    g.add_argument("--public-url", metavar="URL", help="the URL browsers use, when it differs from http://ADDRESS:PORT")
    g.add_argument("--export-dir", default=argparse.SUPPRESS, help="where snapshots go (default ./sdpa-tui-exports)")
    g.add_argument("--engine-memory-mib", type=float, default=argparse.SUPPRESS, metavar="MIB",
                   help=f"as for the live monitor (default {ENGINE_MEMORY_MIB:g}; 0: never)")


def _add_sweep_parser(sub: argparse._SubParsersAction) -> None:
    """``sdpa-tui sweep``: the workload options, with ``--seq`` taking a list or a range of lengths."""
    sweep = sub.add_parser(
        "sweep", conflict_handler="resolve",  # resolve: this --seq replaces the single-length one
        help="measure a range of sequence lengths and say where backends cross over (no UI)",
        description="Measure every enabled backend at several sequence lengths with one engine process; "
        "print a table, a chart and the crossovers.",
        epilog=f"exit codes: 0 done; {EXIT_ENGINE} the engine failed; {EXIT_USAGE} bad input; {EXIT_NOTHING_MEASURED} "
        f"nothing measured: no selected backend ran at any length; {EXIT_INTERRUPTED} interrupted (Ctrl-C).",
    )
    _add_workload_options(sweep, inherited=True)
    g = sweep.add_argument_group("sweep")
    g.add_argument(
        "--seq", dest="sweep_seq", metavar="LIST|A:B", default=None,
        help="required: the query lengths, a list (128,256,512) or a range of powers of two from A to B "
        "(256:32768); --kv-seq follows each length unless given",
    )
    g.add_argument(
        "--padding", metavar="LIST", default=None,
        help="instead of lengths: padding fractions of a padded batch (0,0.25,0.5,0.75) at one --seq, SDPA "
        "against packed attention (varlen_attn, nested jagged SDPA) at each: where packing starts to pay",
    )
    g.add_argument("--duration", type=float, default=1.0, help="seconds to measure each length once ready (default 1)")
    g.add_argument(
        "--stop-after-oom", action=argparse.BooleanOptionalAction, default=True,
        help="a backend out of memory or failing at length N is skipped at longer lengths; the sweep stops "
        "when no backend runs (default: on)",
    )
    g.add_argument("--json", metavar="PATH", help="also write the points and crossovers as JSON")
    g.add_argument("--csv", metavar="PATH", help="also write one row per (length, backend) as CSV")
    g.add_argument("--markdown", metavar="PATH", help="also write the table and crossovers as Markdown")


def _version() -> str:
    from .core.installation import VERSION

    return VERSION


def workload_from(args: argparse.Namespace) -> Workload:
    if args.mask and args.causal and args.mask != "causal":
        raise WorkloadError(f"--causal conflicts with --mask {args.mask}")
    return Workload(
        batch=args.batch,
        heads=args.heads,
        kv_heads=args.kv_heads if args.kv_heads is not None else args.heads,
        seq=args.seq,
        kv_seq=args.kv_seq if args.kv_seq is not None else args.seq,
        head_dim=args.head_dim,
        dtype=args.dtype,
        mask=args.mask or ("causal" if args.causal else "none"),
        direction=args.direction,
    )


def padded_workload(workload: Workload, args: argparse.Namespace, argv: Sequence[str]) -> Workload:
    """``report --lengths`` or ``--padding``: the workload with its lengths (the padding mask); else as it is."""
    text, fraction = getattr(args, "lengths", None), getattr(args, "padding", None)
    if args.command != "report" or text is None and fraction is None:  # sweep's --padding is a list of its own
        return workload
    if workload.mask not in ("none", "padding"):
        raise WorkloadError(f"--lengths and --padding give a key-padding mask; --mask/--causal ask for {workload.mask}")
    if fraction is not None:
        return workload.with_changes(mask="padding", lengths=lengths_for_padding(
            workload.batch, workload.seq, parse_padding(fraction)))
    lengths = parse_lengths(text)
    if _given(argv, "--batch") and workload.batch != len(lengths):
        raise WorkloadError(f"--lengths gives {len(lengths)} sequences; --batch says {workload.batch}")
    padded = workload.seq if _given(argv, "--seq") else max(lengths)
    kv = workload.kv_seq if _given(argv, "--kv-seq") else padded
    return workload.with_changes(batch=len(lengths), seq=padded, kv_seq=kv, mask="padding", lengths=lengths)


def _given(argv: Sequence[str], option: str) -> bool:
    return any(word == option or word.startswith(option + "=") for word in argv)


def parse(argv: Sequence[str] | None = None) -> tuple[argparse.Namespace, Workload, tuple[Backend, ...]]:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    try:
        workload = padded_workload(workload_from(args), args, argv)
        backends = parse_backend_list(args.backends)
        args.priority = parse_priority(args.priority) if getattr(args, "priority", None) else ()
        if args.priority and getattr(args, "legacy_api", False):
            raise ValueError("--priority does not apply with --legacy-api: the legacy sdp_kernel has no priority order")
        if not DEVICE_SPEC.match(args.device):
            raise ValueError(f"--device must be {SPEC_HELP}, got {args.device!r}")
        duration = getattr(args, "duration", 1.0)
        if not (duration > 0 and math.isfinite(duration)):  # nan and inf would measure forever
            raise ValueError(f"--duration must be a positive number of seconds, got {duration:g}")
        check_live_metrics_options(args)
        if not args.engine_memory_mib >= 0:  # nan too
            raise ValueError(f"--engine-memory-mib must be 0 (never) or more, got {args.engine_memory_mib:g}")
        resolve_devices(args)
        check_output_paths(args)
    except ValueError as exc:
        parser.exit(EXIT_USAGE, f"sdpa-tui: error: {exc}\n")
    return args, workload, backends


def main(argv: Sequence[str] | None = None) -> int:
    spawn_children_without_the_script(main)  # run as ``sdpa-tui``: engines spawn without re-running the script
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["watch"]:  # its own parser: everything after -- belongs to the watched program
        from .commands.watch import main as watch_main

        return watch_main(argv[1:], run_ui=_run_watch_ui, advisor=_advise)
    args, workload, backends = parse(argv)
    if args.command == "compare":
        from .commands.compare import run_compare

        return run_compare(args)
    if args.command == "report" and args.inputs:
        from .commands.replay_report import run_inputs_report

        return run_inputs_report(args)
    if args.command == "report" and args.devices is not None:
        from .commands.report_devices import run_devices_report

        return run_devices_report(args, workload, backends)
    if getattr(args, "devices", None) is None:
        try:  # before any engine starts: a device that is not here is bad input
            args.device = check_device(args.device)
        except DeviceError as exc:
            sys.stderr.write(f"sdpa-tui: error: {exc}\n")
            return EXIT_USAGE
    if args.command == "exporter":
        from .commands.exporter import run_exporter

        return run_exporter(args, workload, backends)
    if args.command == "report":
        from .commands.report import run_report

        return run_report(args, workload, backends)
    if args.command == "sweep":
        from .commands.sweep import run_sweep

        return run_sweep(args, workload, backends)
    if args.command == "serve":
        from .commands.serve import run_serve

        return run_serve(args, workload, backends)
    from .engine.host.early_start import can_run_live, start_engine_early

    # The live monitor: its engine (which imports torch for seconds) starts before Textual is imported; not with
    # --devices (an engine per GPU) nor --metrics-port (a port in use must end the command before any engine starts)
    early = getattr(args, "devices", None) is None and getattr(args, "metrics_port", None) is None and can_run_live()
    started = start_engine_early(args.device) if early else None
    from .commands.monitor import run_app

    return run_app(args, workload, backends, started)


def _advise(report, say=None, flex: bool = True, progress=None, budget_s: float | None = None) -> None:
    from .watch.advice.advise import measure_advice  # starts an engine process per device

    measure_advice(report, say, flex, progress, budget_s)


def _run_watch_ui(watched, advisor=None) -> int:
    from .commands.watch_monitor import run_watch_app

    return run_watch_app(watched, advisor)


if __name__ == "__main__":
    sys.exit(main())
