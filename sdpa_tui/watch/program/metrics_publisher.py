"""``watch --metrics-port``: the job's report published for Prometheus every second while it runs."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ...exports.metrics.metrics_server import MetricsServer, serve_metrics
from ...exports.metrics.watch_metrics import WatchMetrics
from .watched_program import WatchedProgram

PUBLISH_EVERY_S = 1.0


@dataclass
class MetricsPublisher:
    watched: WatchedProgram
    metrics: WatchMetrics
    server: MetricsServer
    _stop: threading.Event
    _thread: threading.Thread | None = None

    @classmethod
    def start(cls, watched: WatchedProgram, port: int, address: str) -> MetricsPublisher:
        """Serve at once (a port in use fails here, before the program runs), publish from a thread."""
        metrics = WatchMetrics()
        publisher = cls(watched, metrics, serve_metrics(metrics, port, address), threading.Event())
        publisher._thread = threading.Thread(target=publisher._run, name="sdpa-tui-watch-metrics", daemon=True)
        publisher._thread.start()
        return publisher

    @property
    def url(self) -> str:
        return self.server.url

    def publish(self) -> None:
        code = self.watched.poll() if self.watched.process is not None else None
        self.metrics.publish(self.watched.report(code))

    def _run(self) -> None:
        while not self._stop.wait(PUBLISH_EVERY_S):
            try:
                self.publish()
            except Exception:  # noqa: BLE001 - a scrape shows the last good report
                pass

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
        self.server.stop()
