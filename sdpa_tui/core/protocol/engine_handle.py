"""The seam between the UI and whatever measures for it: one engine process under its supervisor
(``engine/host/supervisor.py``), one per GPU (``engine/host/device_engines.py``), the tests' fakes and the benchmarks'
replay. The app holds one of these and nothing else of the engine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from .engine_commands import Configure


@runtime_checkable
class EngineHandle(Protocol):
    def start(self) -> None:
        """Start measuring (a second call does nothing)."""

    def stop(self) -> None:
        """Stop the engine process(es) and their readers."""

    def configure(self, config: Configure) -> None:
        """Measure this workload with these flags from now on."""

    def set_paused(self, paused: bool) -> None: ...

    def retry(self) -> None:
        """Try again at once after the engine died (no back-off)."""

    def send(self, record: object) -> bool:
        """Send a command (``CaptureTraces``) to the shown engine; False when none is running."""

    def kill_engine(self) -> None:
        """End the engine process now (it is restarted as after a crash)."""

    def switch_device(self, device: str) -> None:
        """Measure (one engine) or show (one per GPU) on ``device`` (``cuda:N``)."""

    @property
    def engine_pids(self) -> frozenset[int]:
        """The engine processes and their profiler processes (NVML does not count them as others)."""


@runtime_checkable
class EnginesPerGpu(EngineHandle, Protocol):
    """``--devices``: one engine per GPU, every one measuring, one shown."""

    @property
    def devices(self) -> tuple[int, ...]:
        """The GPUs measured (NVML indices)."""

    @property
    def cuda_devices(self) -> Mapping[int, str]:
        """Each measured GPU's ``cuda:N`` as the engines see it."""
