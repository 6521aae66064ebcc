"""Build the app (``make_app``, usable from tests) and run it from the command line (``run_app``)."""

from __future__ import annotations

import argparse
import os
import sys
from multiprocessing import resource_tracker
from collections.abc import Callable

from ..core.backends import Backend
from ..core.session import Session
from ..core.workload import Workload
from ..engine.supervisor import EngineSupervisor
from ..telemetry.nvml import GpuPoller
from ..telemetry.snapshot import GpuSnapshot
from .app import SdpaApp
from .messages import EngineEvent, EngineRecords

NVML_INTERVAL_S = 1.0


def gpu_index(device: str) -> int | None:
    """The GPU the NVML panel watches: the one measured on (None in CPU mode)."""
    if device == "cpu":
        return None
    return int(device.split(":", 1)[1]) if ":" in device else 0


def make_app(
    workload: Workload,
    backends: tuple[Backend, ...],
    device: str = "cuda",
    export_dir: str = "sdpa-tui-exports",
) -> SdpaApp:
    """The real app: an engine process for ``device`` and an NVML poller for its GPU."""
    # Spawning the engine needs multiprocessing's resource tracker, which passes on
    # sys.stderr's descriptor: start it now, while sys.stderr is the real one (a running
    # Textual app replaces it with an object that has none).
    resource_tracker.ensure_running()
    session = Session(workload, backends)
    index = gpu_index(device)

    def gpu_source(deliver: Callable[[GpuSnapshot], None]) -> object:
        if index is None:
            deliver(GpuSnapshot.unavailable("--device cpu: no GPU is watched"))
            return _Nothing()
        poller = GpuPoller(deliver, interval=NVML_INTERVAL_S, index=index)
        poller.start()
        return _PollerWithOwnPids(poller, app)

    app = SdpaApp(session, engine=None, gpu_source=gpu_source, export_dir=export_dir)
    app.engine = EngineSupervisor(
        device,
        on_records=lambda records: app.post_message(EngineRecords(records)),
        on_event=lambda event: app.post_message(EngineEvent(event)),
    )
    return app


class _Nothing:
    def stop(self) -> None:
        pass


class _PollerWithOwnPids:
    """Tells the poller which GPU process is our engine, so it is not counted as 'another process'."""

    def __init__(self, poller: GpuPoller, app: SdpaApp) -> None:
        self.poller = poller
        self.app = app
        app.set_interval(2.0, self._update)

    def _update(self) -> None:
        pid = self.app.engine.engine_pid
        self.poller.own_pids = {pid} if pid else set()

    def stop(self) -> None:
        self.poller.stop()


def run_app(args: argparse.Namespace, workload: Workload, backends: tuple[Backend, ...]) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(
            "sdpa-tui: no terminal here (stdin/stdout is not a TTY). "
            "For scripts and CI use: sdpa-tui report [options] (--json/--markdown to save)",
            file=sys.stderr,
        )
        return 2
    app = make_app(workload, backends, args.device, os.path.expanduser(args.export_dir))
    app.run()
    return app.return_code or 0
