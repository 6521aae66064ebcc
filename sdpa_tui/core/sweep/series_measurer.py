"""What the sweep view needs of whatever measures a series of workloads: ``engine/host/headless.py``'s
``measure_series`` (one engine process of its own), or the tests' stand-in. The UI holds one of these and imports
nothing of the engine."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from ..backends import Backend
from ..lab.session import Session
from ..protocol.headless_progress import SeriesProgress
from ..workload import Workload


class SeriesMeasurer(Protocol):
    def __call__(self, workloads: Sequence[Workload], enabled: tuple[Backend, ...], device: str = ..., *,
                 duration_s: float = ..., timeout_s: float = ...,
                 on_progress: Callable[[SeriesProgress], None] | None = ...,
                 next_enabled: Callable[[Session], Sequence[Backend]] | None = ...) -> Iterator[Session]:
        """Measure ``workloads`` one after the other; yield a :class:`Session` for each. Raises
        :class:`~..protocol.headless_progress.EngineFailed` when the engine cannot start or dies."""
        ...
