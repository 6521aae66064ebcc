"""Serve a collector on ``http://ADDRESS:PORT/metrics`` with prometheus_client's own HTTP server."""

from __future__ import annotations

import errno
import threading
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.registry import Collector

from .metrics_address import DEFAULT_ADDRESS, check_address, check_port


class MetricsServerError(Exception):
    """The endpoint could not be served; ``str()`` is one line saying why."""


@dataclass
class MetricsServer:
    server: WSGIServer
    thread: threading.Thread
    address: str

    @property
    def port(self) -> int:
        return self.server.server_port

    @property
    def url(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}/metrics"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5.0)


def serve_metrics(collector: Collector, port: int, address: str = DEFAULT_ADDRESS) -> MetricsServer:
    """Start serving ``collector`` alone (no process or platform metrics) on a daemon thread."""
    address = check_address(address)
    check_port(port)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    try:
        server, thread = start_http_server(port, addr=address, registry=registry)
    except OSError as exc:
        hint = ": choose another port" if exc.errno == errno.EADDRINUSE else ""  # as serve says it
        raise MetricsServerError(f"cannot serve metrics on {address} port {port}: {exc.strerror or exc}{hint}") from None
    return MetricsServer(server, thread, address)
