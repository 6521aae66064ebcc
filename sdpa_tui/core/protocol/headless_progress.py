"""What a measurement without a UI (``engine/host/headless.py``: ``report``, ``sweep``, the sweep view, watch's advice)
tells its caller while it runs, and how it fails."""

from __future__ import annotations

from dataclasses import dataclass

from ..workload import Workload


class EngineFailed(RuntimeError):
    """The engine could not start or died; the message says why."""


@dataclass(frozen=True)
class Progress:
    elapsed_s: float
    ready: bool
    done_backends: int
    total_backends: int
    text: str


@dataclass(frozen=True)
class SeriesProgress(Progress):
    """Progress of a series of workloads: ``index`` (from 0) of ``count`` workloads."""

    index: int
    count: int
    workload: Workload
