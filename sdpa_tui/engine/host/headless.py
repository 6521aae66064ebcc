"""Measure a workload for a while without a UI: what ``sdpa-tui report`` runs."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ...core.backends import ALL_BACKENDS, Backend
from ...core.lab.backend_state import BackendState
from ...core.lab.session import Session
from ...core.protocol.engine_commands import Configure
from ...core.protocol.headless_progress import EngineFailed, Progress, SeriesProgress
from ...core.protocol.records import EngineError, Ready
from ...core.status import Status
from ...core.workload import Workload
from .client import EngineClient

MIN_SAMPLES = 5
"""Each running backend gets at least this many timing samples before a report is final."""
PROFILE_EVERY_MAX_S = 8.0
"""Headless kernel bursts: the first a second after a backend's first numbers, then doubling up to this (one
capture is all a result needs; later ones refresh it), and never sooner than four times the last one took."""


def measure(
    workload: Workload,
    enabled: tuple[Backend, ...],
    device: str = "auto",
    duration_s: float = 3.0,
    timeout_s: float = 600.0,
    on_progress: Callable[[Progress], None] | None = None,
    legacy_api: bool = False,
    priority: tuple[Backend, ...] = (),
) -> Session:
    """Run the engine until every enabled backend has a verdict and enough samples.

    Measures for at least ``duration_s`` once the engine is ready, at most ``timeout_s``.
    With ``legacy_api`` the flags are applied as ``torch.backends.cuda.sdp_kernel`` does, and
    the backends torch leaves on are measured too.
    """
    session = Session(workload, enabled)
    session.legacy_api = legacy_api
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
                    client.send(Configure(session.next_config_id(), workload, enabled, profile_every_s=1.0,
                                          profile_every_max_s=PROFILE_EVERY_MAX_S, legacy_api=legacy_api,
                                          priority=priority))
            if not client.alive and not client.receive():
                message = session.errors[-1] if session.errors else f"exit code {client.exit_code}"
                raise EngineFailed(f"the engine process ended: {message}")
            now = time.monotonic()
            measured = session.enabled  # with the legacy API, torch may leave more on than asked
            done = sum(backend_finished(session, b) for b in measured)
            if on_progress:
                on_progress(Progress(now - start, ready_at is not None, done, len(measured), _status(session, measured)))
            peak = workload.dtype in session.peaks or not any(s.status == Status.OK for s in session.backends.values())
            if ready_at is not None and session.dispatch and done == len(measured) and peak and now - ready_at >= duration_s:
                return session
            if now - start > timeout_s:
                if ready_at is None or not _any_numbers(session):
                    raise EngineFailed(f"measuring took longer than {timeout_s:.0f} s, with no result to report")
                session.incomplete = _shortfall(session, timeout_s)
                return session
    finally:
        client.stop()


GPU_CLOCK_METHODS = ("pending", "graph", "events")
"""A backend timed on a GPU gets its GPU/call clock (from its second slice on), the clock its pick and the advice
are judged on: it is waited for too, or a short measurement compares a clock with fewer samples than the rule needs."""


def _wants_gpu_clock(state: BackendState) -> bool:
    return state.gpu_method in GPU_CLOCK_METHODS and len(state.gpu) < MIN_SAMPLES


def backend_finished(session: Session, backend: Backend) -> bool:
    """The backend has its verdict, and if it runs, its samples (timed apart from the profiler's start), its kernels
    and, on a GPU, its GPU/call samples."""
    state = session.backends[backend]
    if state.status in (Status.NOT_ELIGIBLE, Status.ERROR, Status.OOM):
        return True
    return (state.status == Status.OK and state.eager_settled >= MIN_SAMPLES and len(state.kernel) > 0
            and not _wants_gpu_clock(state))


def still_wanted(session: Session, backend: Backend) -> str:
    """What an unfinished backend still waits for, in words."""
    state = session.backends[backend]
    if state.status != Status.OK:
        return "its eligibility"
    wants = []
    if state.eager_settled < MIN_SAMPLES:
        wants.append(f"{state.eager_settled}/{MIN_SAMPLES} timings")
    elif _wants_gpu_clock(state):
        wants.append(f"{len(state.gpu)}/{MIN_SAMPLES} GPU/call timings")
    if not state.kernel:
        wants.append("its kernels")
    return ", ".join(wants)


def _status(session: Session, enabled: tuple[Backend, ...]) -> str:
    if session.environment is None:
        return "starting the engine (importing torch)"
    waiting = [f"{b.label} ({still_wanted(session, b)})" for b in enabled if not backend_finished(session, b)]
    return f"measuring {'; '.join(waiting)}" if waiting else "measuring"


def _any_numbers(session: Session) -> bool:
    return any(state.eager for state in session.backends.values())


def _shortfall(session: Session, timeout_s: float) -> str:
    """The note of a result whose time ran out: which backends are short of what."""
    short = [f"{b.label}: {still_wanted(session, b)}" for b in session.enabled if not backend_finished(session, b)]
    return (f"time was up after {timeout_s:.0f} s: few samples ({'; '.join(short) or 'none short'}); "
            "these numbers rest on fewer timings than a full result")


# ------------------------------------------------------------------ several workloads, one engine
def measure_series(
    workloads: Sequence[Workload],
    enabled: tuple[Backend, ...],
    device: str = "auto",
    duration_s: float = 1.0,
    on_progress: Callable[[SeriesProgress], None] | None = None,
    timeout_s: float = 600.0,
    next_enabled: Callable[[Session], Sequence[Backend]] | None = None,
    legacy_api: bool = False,
    priority: tuple[Backend, ...] = (),
    settled: Callable[[int, Session], bool] | None = None,
    longest_s: float = 0.0,
    deadline: float | None = None,
    deadline_grace_s: float = 0.0,
) -> Iterator[Session]:
    """Measure ``workloads`` one after the other with ONE engine process; yield a Session for each.

    Each workload gets a fresh :class:`Session` (with the environment the engine reported) and a
    new ``Configure`` with a new config id, so records still in flight for the previous workload
    are ignored. Each is measured as :func:`measure` does: until every measured backend has a
    verdict (eligible with enough samples, not eligible, out of memory, error) and at least
    ``duration_s`` have passed since it was configured; where ``settled(index, session)`` is given, also until it
    says so (asked at least once) or ``longest_s`` have passed since its numbers were complete (a busy machine's slow
    start does not eat the time it is measured on for); at most ``timeout_s`` per workload (and
    for the engine to start). Past ``deadline`` (``time.monotonic()``'s), a workload ends as soon as every backend has
    its verdict and samples, ``deadline_grace_s`` later with what it has (``incomplete`` says what is short), and the
    series ends with it. A workload whose inputs do not fit comes back with every backend
    out of memory.

    ``next_enabled(session)``, called once the session yielded has been consumed, returns the
    backends to measure at the next workload; when it returns none, the series ends there.
    Without it every workload is measured with ``enabled``.

    Raises :class:`EngineFailed` when the engine cannot start, dies or takes too long; sessions
    yielded before stay valid. The engine process ends with the generator (finished or closed).
    """
    workloads = list(workloads)
    count = len(workloads)
    enabled = tuple(enabled)
    if not workloads or not enabled:
        return
    options: dict[str, Any] = {"profile_every_s": 1.0, "profile_every_max_s": PROFILE_EVERY_MAX_S}
    if legacy_api:
        options["legacy_api"] = True
    if priority:
        options["priority"] = tuple(priority)

    def report(index: int, session: Session, since: float, ready: bool) -> None:
        if on_progress is None:
            return
        measured = session.enabled
        done = sum(backend_finished(session, b) for b in measured) if ready else 0
        text = _status(session, measured)
        on_progress(SeriesProgress(time.monotonic() - since, ready, done, len(measured), text,
                                   index, count, workloads[index]))

    client = EngineClient(device)
    client.start()
    try:
        # -- the engine starts (imports torch) and says what it runs on
        previous = Session(workloads[0], enabled)  # holds what comes before the first workload
        start = time.monotonic()
        while previous.environment is None:
            for record in client.receive(timeout=0.1):
                if isinstance(record, EngineError) and record.fatal:
                    raise EngineFailed(record.message)
                previous.apply(record)
            _check_alive(client, previous)
            report(0, previous, start, False)
            if time.monotonic() - start > timeout_s:
                raise EngineFailed(f"the engine did not start within {timeout_s:.0f} s")
        config_id = 0
        for index, workload in enumerate(workloads):
            session = Session(workload, enabled)
            session.environment = previous.environment
            if legacy_api:
                session.legacy_api = True
            if hasattr(previous, "peaks"):  # measured once per engine, not per workload
                session.peaks = dict(previous.peaks)
            session.config_id = config_id
            config_id = session.next_config_id()
            client.send(Configure(config_id, workload, enabled, **options))
            configured_at = time.monotonic()
            complete_at: float | None = None  # every backend's verdict and samples in
            while True:
                for record in client.receive(timeout=0.1):
                    if isinstance(record, EngineError) and record.fatal:
                        raise EngineFailed(record.message)
                    session.apply(record)
                _check_alive(client, session)
                report(index, session, configured_at, True)
                now = time.monotonic()
                measured = session.enabled  # with the legacy API, torch may leave more on than asked
                done = sum(backend_finished(session, b) for b in measured)
                late = deadline is not None and now >= deadline
                over = now - deadline if deadline is not None else 0.0
                if complete_at is None and session.dispatch and done == len(measured):
                    complete_at = now
                if complete_at is not None and (late or now - configured_at >= duration_s and (
                        settled is None or settled(index, session) or now - complete_at >= longest_s)):
                    break
                if late and over > deadline_grace_s and _any_numbers(session):
                    session.incomplete = _shortfall(session, now - configured_at)
                    break
                if now - configured_at > timeout_s:
                    if not _any_numbers(session):
                        raise EngineFailed(
                            f"measuring {workload.describe()} took longer than {timeout_s:.0f} s, with no result"
                        )
                    session.incomplete = _shortfall(session, timeout_s)
                    break
            yield session
            previous = session
            if deadline is not None and time.monotonic() >= deadline:
                return
            if next_enabled is not None:
                chosen = set(next_enabled(session))
                enabled = tuple(b for b in ALL_BACKENDS if b in chosen)
                if not enabled:
                    return
    finally:
        client.stop()


def _check_alive(client: EngineClient, session: Session) -> None:
    if not client.alive and not client.receive():
        message = session.errors[-1] if session.errors else f"exit code {client.exit_code}"
        raise EngineFailed(f"the engine process ended: {message}")
