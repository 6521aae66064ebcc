"""What the engine's records and its supervisor's events mean for the lab's screen: the header's engine line, the
status line, whether the panels must be redrawn now.

:class:`EngineNews` applies records to the shown GPU's :class:`Session` and keeps what it needs to word them (the
engine being replaced, the last error said, the backends already drawn for this configuration). It imports no
Textual: the app's handlers hand it what arrived and act on the :class:`News` it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ...core.backends import Backend
from ...core.lab.session import Session
from ...core.protocol.engine_events import EngineDied, EngineLifecycle, EngineRecycled, EngineStarting
from ...core.protocol.records import EngineRecord, Ready, Sample, TracesCaptured

ENGINE_STARTING = "engine starting (importing torch)…"
"""The header's engine line until the engine says it is ready."""


@dataclass(frozen=True)
class StatusLine:
    text: str
    error: bool = False


@dataclass
class News:
    """What some records or an event changed, for the app to show."""

    session_changed: bool = False
    """Something the panels show changed."""
    first_numbers: bool = False
    """Some backend's first number of the current configuration: drawn at once, not at the next redraw."""
    engine_state: str | None = None
    """The header's new engine line ('' once the engine is ready); None when unchanged."""
    statuses: list[StatusLine] = field(default_factory=list)
    traces: list[TracesCaptured] = field(default_factory=list)
    """Answers to snapshot and trace requests."""


class EngineNews:
    """Reads the engine's records into the shown session (``session()``: it changes when another GPU is shown)."""

    def __init__(self, session: Callable[[], Session]) -> None:
        self.session = session
        self.replacing_engine: float | None = None
        """MiB of host memory the engine being replaced had grown, while a fresh one starts."""
        self.last_error = ""
        self.drawn: tuple[int, set[Backend]] = (-1, set())
        """A configuration, and the backends whose first number of it was drawn."""

    def records(self, records: list[EngineRecord]) -> News:
        session = self.session()
        news = News()
        for record in records:
            if session.apply(record):
                news.session_changed = True
            if isinstance(record, Ready):
                news.engine_state = ""
                mode = "the CPU" if record.environment.is_cpu else record.environment.device_name
                if self.replacing_engine is None:
                    news.statuses.append(StatusLine(f"engine ready on {mode}"))
                else:
                    news.statuses.append(StatusLine(
                        f"fresh engine ready on {mode}: the last one had grown {self.replacing_engine:,.0f} MiB "
                        "of host memory (history kept)"))
                self.replacing_engine = None
            elif isinstance(record, TracesCaptured):
                news.traces.append(record)
        news.first_numbers = self._first_numbers_of_configuration(session, records)
        errors = list(session.errors)  # kept in the session: snapshots export them
        if errors and errors[-1] != self.last_error:
            self.last_error = errors[-1]
            news.statuses.append(StatusLine(errors[-1], error=True))
        return news

    def _first_numbers_of_configuration(self, session: Session, records: list[EngineRecord]) -> bool:
        """Whether ``records`` bring some backend's first number of the current configuration."""
        current = session.config_id
        if self.drawn[0] != current:
            self.drawn = (current, set())
        drawn = self.drawn[1]
        fresh = {r.backend for r in records if isinstance(r, Sample) and r.config_id == current} - drawn
        drawn |= fresh
        return bool(fresh)

    def event(self, event: EngineLifecycle) -> News:
        news = News(session_changed=True)
        if isinstance(event, EngineStarting) and event.attempt > 1:
            news.engine_state = f"restarting the engine (attempt {event.attempt})"
        elif isinstance(event, EngineRecycled):
            self.replacing_engine = event.growth_mib
            news.engine_state = "restarting the engine to give host memory back"
            news.statuses.append(StatusLine(
                f"the engine's host memory grew {event.growth_mib:,.0f} MiB beyond its first uses "
                "(torch keeps it for good); restarting it, history kept"))
        elif isinstance(event, EngineDied):
            if event.retry_in_s is None:
                news.engine_state = "engine stopped: it died repeatedly on this workload"
                news.statuses.append(StatusLine(
                    f"engine died again ({event.message}); not retrying: change the workload or press r", error=True))
            else:
                news.engine_state = f"engine died; restarting in {event.retry_in_s:.0f} s"
                news.statuses.append(StatusLine(f"engine died: {event.message}; history kept, restarting",
                                                error=True))
        return news
