"""What a supervisor tells the UI about its engine process itself (not a record the engine sent): it is starting, it
was recycled to give host memory back, or it died. The supervisors (``engine/host/``) post them; the UI and the
exporter read them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineStarting:
    attempt: int


@dataclass(frozen=True)
class EngineRecycled:
    """The engine stopped to give back host memory; a fresh one starts at once."""

    growth_mib: float


@dataclass(frozen=True)
class EngineDied:
    exit_code: int | None
    message: str
    retry_in_s: float | None  # None: gave up on this configuration


EngineLifecycle = EngineStarting | EngineRecycled | EngineDied
"""Any of the supervisor's events about its engine process."""
