"""``sdpa-tui exporter``: measure continuously without a UI and serve ``/metrics`` for Prometheus.

The engine runs as in the live monitor (its own process, restarted when it dies, replaced when
its host memory grew too much); an NVML poller reads the GPU measured on. Both deliver on their
own threads; each takes the lock, updates the session and publishes the metrics
(:class:`~sdpa_tui.exports.metrics.lab_metrics.LatestMetrics`). SIGINT, SIGTERM and SIGHUP stop it (exit 0).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from ..core.backends import Backend
from ..core.lab.lab_controller import LabController
from ..core.lab.session import Session
from ..core.protocol.engine_events import EngineDied, EngineRecycled
from ..core.protocol.records import Ready
from ..core.workload import Workload
from ..engine.host.supervisor import EngineSupervisor
from ..exports.metrics.lab_metrics import LatestMetrics
from ..exports.metrics.metrics_address import check_address, check_port, is_loopback
from ..exports.metrics.metrics_server import MetricsServerError, serve_metrics
from ..telemetry.device_choice import gpu_index
from ..telemetry.gpu_poller import GpuPoller
from ..telemetry.gpu_snapshot import GpuSnapshot
from .exit_codes import EXIT_USAGE

NVML_INTERVAL_S = 1.0


class Exporter:
    """An engine, an NVML poller and the metrics they publish."""

    def __init__(self, workload: Workload, backends: tuple[Backend, ...], device: str, legacy_api: bool = False,
                 priority: tuple[Backend, ...] = (), engine_memory_mib: float = 0.0) -> None:
        self.device = device
        self.session = Session(workload, backends)
        self.session.legacy_api = legacy_api
        self.metrics = LatestMetrics(device)
        self.gpu: GpuSnapshot | None = None
        self._lock = threading.Lock()
        # as the live monitor configures its engine: four samples a second, kernel bursts backing off to a minute
        self._config = LabController(self.session, priority, engine_memory_mib).configure_record()
        self.engine = EngineSupervisor(device, on_records=self._on_records, on_event=self._on_event)
        self._poller: GpuPoller | None = None
        self.metrics.publish(self.session, None)

    def start(self) -> None:
        self.engine.start()
        self.engine.configure(self._config)
        index = gpu_index(self.device)
        if index is not None:
            self._poller = GpuPoller(self._on_gpu, interval=NVML_INTERVAL_S, index=index)
            self._poller.start()

    def stop(self) -> None:
        if self._poller is not None:
            self._poller.stop()
        self.engine.stop()

    def _on_records(self, records: list[Any]) -> None:
        with self._lock:
            for record in records:
                self.session.apply(record)
                if isinstance(record, Ready):
                    env = record.environment
                    _say(f"engine ready on {'the CPU' if env.is_cpu else env.device_name}")
            self.metrics.publish(self.session, self.gpu)

    def _on_event(self, event: object) -> None:
        if isinstance(event, EngineDied):
            retry = "not retrying" if event.retry_in_s is None else f"restarting in {event.retry_in_s:.0f} s"
            _say(f"the engine died ({event.message}); {retry}")
        elif isinstance(event, EngineRecycled):
            _say(f"the engine's host memory grew {event.growth_mib:,.0f} MiB; replacing it")

    def _on_gpu(self, snapshot: GpuSnapshot) -> None:
        if self._poller is not None:  # the engine and its profiler process are never "other"
            self._poller.own_pids = self.engine.engine_pids
        with self._lock:
            self.gpu = snapshot
            flags = [name for name, on in (("throttled", snapshot.throttled),
                                           ("shared", bool(snapshot.other_processes))) if on]
            self.session.gpu_conditions = tuple(flags)
            self.metrics.publish(self.session, snapshot)


def _say(line: str) -> None:
    print(f"sdpa-tui exporter: {line}", file=sys.stderr, flush=True)


def run_exporter(args: argparse.Namespace, workload: Workload, backends: tuple[Backend, ...]) -> int:
    try:
        address, port = check_address(args.address), check_port(args.port)
    except ValueError as exc:
        print(f"sdpa-tui exporter: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    exporter = Exporter(workload, backends, args.device, legacy_api=args.legacy_api, priority=args.priority,
                        engine_memory_mib=args.engine_memory_mib)
    try:
        server = serve_metrics(exporter.metrics, port, address)
    except MetricsServerError as exc:
        print(f"sdpa-tui exporter: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    _say(f"serving {server.url} (measuring {workload.describe()} on {args.device}; Ctrl+C stops)")
    if not is_loopback(address):
        _say(f"listening on {address}, not only on this machine: other hosts can read the metrics")
    exporter.start()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        exporter.stop()
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
