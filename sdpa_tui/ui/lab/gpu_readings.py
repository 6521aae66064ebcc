"""The NVML readings the app shows: one poller thread reads every GPU of the host and posts the reading as messages
(the overview's :class:`HostGpusUpdate`, the watched GPU's :class:`GpuUpdate` for the GPU panel)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from textual.message import Message

from ...telemetry.gpu_snapshot import GpuSnapshot
from ...telemetry.host_gpus import HostGpuPoller, HostGpus
from ..messages import HostGpusUpdate
from .lab_gpus import LabGpus

NVML_INTERVAL_S = 1.0
OWN_PIDS_EVERY_S = 2.0


class Stoppable(Protocol):
    def stop(self) -> None: ...


GpuSource = Callable[[Callable[[GpuSnapshot], None]], Stoppable]
"""Starts delivering the watched GPU's readings (from a thread of its own) and returns what stops it."""


class GpuReadingsHost(Protocol):
    """What :func:`host_gpu_source` needs of the app."""

    lab_gpus: LabGpus

    def post_message(self, message: Message) -> bool: ...

    def set_interval(self, interval: float, callback: Callable[[], None]) -> object: ...


def host_gpu_source(app: GpuReadingsHost, interval: float = NVML_INTERVAL_S) -> GpuSource:
    """``gpu_source`` for the app: one poller reads every GPU; the watched one also goes to the
    GPU panel. Our engine processes are not counted as other processes."""

    def start(deliver: Callable[[GpuSnapshot], None]) -> Stoppable:
        def on_host(host: HostGpus) -> None:
            app.post_message(HostGpusUpdate(host))
            index = app.lab_gpus.watched_gpu
            if index is None:
                deliver(GpuSnapshot.unavailable("on the CPU: no GPU is watched"))
            else:
                deliver(host.get(index) or GpuSnapshot.unavailable(host.reason or f"NVML has no GPU {index}", index))

        poller = HostGpuPoller(on_host, interval=interval)
        poller.start()

        def own_pids() -> None:
            poller.own_pids = app.lab_gpus.engine.engine_pids

        app.set_interval(OWN_PIDS_EVERY_S, own_pids)
        return poller

    return start
