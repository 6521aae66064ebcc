"""Build the app (``make_app``, usable from tests) and run it from the command line (``run_app``).

Leaving cleanly (README, "When things go wrong"): whatever ends the session, the app
exits through Textual's normal shutdown, whose unmount stops the engine
(:meth:`EngineSupervisor.stop`: Shutdown, join, terminate, kill), so no engine is left
holding GPU memory:

- ``q``, ``ctrl+q`` and ``ctrl+c``. Textual 8 reads the terminal in raw mode (no ISIG), so
  ctrl+c is a key, not SIGINT, and Textual binds it to ``help_quit``, which only shows
  "Press ctrl+q to quit". :class:`LiveApp` binds it to quit (a focused text input still
  gets it first, as copy).
- SIGHUP (the SSH connection or the terminal window closed), SIGTERM, SIGINT
  (``kill -INT``): Textual installs no handler for them, so by default the process dies on
  the spot, the terminal is left in raw/alternate-screen mode and the engine only goes
  because of its PR_SET_PDEATHSIG. :func:`exit_on_signals` turns them into ``app.exit``
  (exit status 128 + signal number), and arms a last-resort timer that kills the engine
  and ends the process if the orderly exit has not finished in ``FORCE_EXIT_AFTER_S``.
- The terminal goes away without a signal (stdin hung up or closed, writes failing with
  EIO): :class:`LiveApp` polls the terminal, and its driver drops writes to a dead
  terminal (Textual's writer thread would die on the first EIO, after which the app
  blocks on its full output queue and never exits).
- ``kill -9`` of the UI: nothing can run; the engine gets SIGTERM from PR_SET_PDEATHSIG.

``LiveApp`` and its terminal guards live in :mod:`sdpa_tui.ui.live_app` (the driver in
:mod:`sdpa_tui.ui.terminal.guarded_driver`), ``exit_on_signals`` in :mod:`sdpa_tui.ui.terminal.exit_signals`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from ..core.backends import Backend
from ..core.lab.lab_controller import LabController
from ..core.lab.session import Session
from ..core.protocol.engine_commands import ENGINE_MEMORY_MIB
from ..core.protocol.engine_events import EngineLifecycle
from ..core.protocol.engine_handle import EngineHandle
from ..core.protocol.records import EngineRecord
from ..core.workload import Workload
from ..engine.host.device_engines import DeviceEngines, engine_device
from ..engine.host.early_start import Relay, can_run_live, start_resource_tracker
from ..engine.host.headless import measure_series
from ..engine.host.supervisor import EngineSupervisor
from ..telemetry.device_choice import find_gpus
from ..telemetry.host_cpu import cpu_pressure
from ..ui.lab.gpu_readings import host_gpu_source
from ..ui.live_app import LiveApp
from ..ui.messages import DeviceEvent, DeviceRecords, EngineEvent, EngineRecords
from ..ui.terminal.exit_signals import exit_on_signals


def make_app(
    workload: Workload,
    backends: tuple[Backend, ...],
    device: str = "auto",
    export_dir: str = "sdpa-tui-exports",
    legacy_api: bool = False,
    priority: tuple[Backend, ...] = (),
    engine_memory_mib: float = ENGINE_MEMORY_MIB,
    devices: tuple[int, ...] | None = None,
    app_class: type[LiveApp] | None = None,
    started: tuple[EngineSupervisor, Relay] | None = None,
) -> LiveApp:
    """The real app: an engine process for ``device`` (or one per GPU in ``devices``, side by
    side) and an NVML poller for every GPU of the host. ``app_class``: a :class:`LiveApp`
    subclass (``sdpa-tui watch``'s); ``started``: the engine the command line started before the UI was imported
    (``engine/host/early_start.py``), and the relay that kept what it said meanwhile."""
    start_resource_tracker()
    session = Session(workload, backends)
    session.legacy_api = legacy_api
    if devices:
        engines_see = find_gpus()  # once, for the first GPU and every engine
        device = engine_device(devices[0], engines_see)
    controller = LabController(session, priority, engine_memory_mib)
    app: LiveApp  # made below: the engines' callbacks post to it from their threads once it runs

    def on_records(records: list[EngineRecord]) -> None:
        app.post_message(EngineRecords(records))

    def on_event(event: EngineLifecycle) -> None:
        app.post_message(EngineEvent(event))

    engine: EngineHandle
    relay = None
    if devices:  # one engine per GPU, side by side
        engine = DeviceEngines(devices, on_records=lambda i, records: app.post_message(DeviceRecords(i, records)),
                               on_event=lambda i, event: app.post_message(DeviceEvent(i, event)), gpus=engines_see)
    elif started is not None:
        engine, relay = started
    else:
        engine = EngineSupervisor(device, on_records=on_records, on_event=on_event)
    app = (app_class or LiveApp)(session, engine, gpu_source=None, export_dir=export_dir, device=device,
                                 controller=controller, measure_series=measure_series)
    app.gpu_source = host_gpu_source(app)
    app.host_pressure_source = cpu_pressure  # the header says when the host's CPUs are contended
    if relay is not None:
        relay.connect(on_records, on_event)
    return app


def run_app(args: argparse.Namespace, workload: Workload, backends: tuple[Backend, ...],
            started: tuple[EngineSupervisor, Relay] | None = None) -> int:
    """``started``: the engine the command line started before importing the UI (``engine/host/early_start.py``)."""
    if not can_run_live():
        print(
            "sdpa-tui: no terminal here (stdin/stdout is not a TTY). "
            "For scripts and CI use: sdpa-tui report [options] (--json/--markdown to save)",
            file=sys.stderr,
        )
        return 2
    app = make_app(workload, backends, args.device, os.path.expanduser(args.export_dir),
                   legacy_api=args.legacy_api, priority=args.priority, engine_memory_mib=args.engine_memory_mib,
                   devices=getattr(args, "devices", None), started=started)
    app.watch_terminal = True
    server = None
    if getattr(args, "metrics_port", None) is not None:
        from ..exports.metrics.lab_metrics import LatestMetrics  # prometheus_client only when asked for
        from ..exports.metrics.metrics_server import MetricsServerError, serve_metrics

        app.metrics = LatestMetrics(args.device)
        try:
            server = serve_metrics(app.metrics, args.metrics_port, args.metrics_address)
        except MetricsServerError as exc:
            print(f"sdpa-tui: error: {exc}", file=sys.stderr)
            return 2
    app.engine.start()  # import torch overlaps the UI's own start; the app's mount finds it started
    try:
        with exit_on_signals(app):
            app.run()
    finally:
        if server is not None:
            server.stop()
    if app.exit_reason:
        with contextlib.suppress(OSError, ValueError):  # the terminal may be gone
            print(f"sdpa-tui: {app.exit_reason}: engine stopped, exiting", file=sys.stderr)
    return app.return_code or 0
