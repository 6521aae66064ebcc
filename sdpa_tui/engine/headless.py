"""Measure a workload for a while without a UI: what ``sdpa-tui report`` runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ..core.backends import Backend
from ..core.records import Configure, EngineError, Ready
from ..core.session import Session
from ..core.workload import Workload
from .client import EngineClient

MIN_SAMPLES = 5
"""Each running backend gets at least this many timing samples before a report is final."""


class EngineFailed(RuntimeError):
    """The engine could not start or died; the message says why."""


@dataclass(frozen=True)
class Progress:
    elapsed_s: float
    ready: bool
    done_backends: int
    total_backends: int
    text: str


def measure(
    workload: Workload,
    enabled: tuple[Backend, ...],
    device: str = "cuda",
    duration_s: float = 3.0,
    timeout_s: float = 600.0,
    on_progress: Callable[[Progress], None] | None = None,
) -> Session:
    """Run the engine until every enabled backend has a verdict and enough samples.

    Measures for at least ``duration_s`` once the engine is ready, at most ``timeout_s``.
    """
    session = Session(workload, enabled)
    client = EngineClient(device)
    client.start()
    try:
        start = time.monotonic()
        ready_at: float | None = None
        while True:
            for record in client.receive(timeout=0.1):
                if isinstance(record, EngineError) and record.fatal:
                    raise EngineFailed(record.message)
                session.apply(record)
                if isinstance(record, Ready):
                    ready_at = time.monotonic()
                    client.send(Configure(session.next_config_id(), workload, enabled, profile_every_s=1.0))
            if not client.alive and not client.receive():
                message = session.errors[-1] if session.errors else f"exit code {client.exit_code}"
                raise EngineFailed(f"the engine process ended: {message}")
            now = time.monotonic()
            done = sum(_finished(session, b) for b in enabled)
            if on_progress:
                on_progress(Progress(now - start, ready_at is not None, done, len(enabled), _status(session, enabled)))
            if ready_at is not None and done == len(enabled) and now - ready_at >= duration_s:
                return session
            if now - start > timeout_s:
                raise EngineFailed(f"measuring took longer than {timeout_s:.0f} s; partial results are not reported")
    finally:
        client.stop()


def _finished(session: Session, backend: Backend) -> bool:
    state = session.backends[backend]
    if state.status in ("not_eligible", "error", "oom"):
        return True
    return state.status == "ok" and len(state.eager) >= MIN_SAMPLES and len(state.kernel) > 0


def _status(session: Session, enabled: tuple[Backend, ...]) -> str:
    if session.environment is None:
        return "starting the engine (importing torch)"
    waiting = [b.label for b in enabled if not _finished(session, b)]
    return f"measuring {', '.join(waiting)}" if waiting else "measuring"
