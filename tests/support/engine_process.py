"""A real engine process on the CPU, as the engine's and the profiler's tests start it, and the wait for its records."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.records import EngineError, Ready
from sdpa_tui.engine.host.client import EngineClient

DEADLINE_S = 120.0  # a bound against hangs on a loaded machine, not a performance claim


def wait_for(client: EngineClient, session: Session | None, done: Callable[[list], bool]) -> list:
    """Receive (and apply) records until ``done(records so far)`` holds; fail on a dead engine or at the deadline."""
    records: list = []
    deadline = time.monotonic() + DEADLINE_S
    while not done(records):
        if time.monotonic() > deadline:
            pytest.fail(f"no answer from the engine within {DEADLINE_S:.0f} s; got {records[-5:]!r}")
        batch = client.receive(timeout=0.2)
        for record in batch:
            if isinstance(record, EngineError) and record.fatal:
                pytest.fail(f"engine failed: {record.message}")
            if session is not None:
                session.apply(record)
        records.extend(batch)
        if not batch and not client.alive:
            pytest.fail(f"the engine died (exit code {client.exit_code})")
    return records


@contextmanager
def ready_engine() -> Iterator[EngineClient]:
    """A fresh engine process on the CPU, ready for a Configure; stopped on the way out."""
    client = EngineClient("cpu")
    client.start()
    try:
        wait_for(client, None, lambda rs: any(isinstance(r, Ready) for r in rs))
        yield client
    finally:
        client.stop()
