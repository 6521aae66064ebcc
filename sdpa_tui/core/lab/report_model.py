"""One computation of what every view of a lab session shows: the comparison rows and the backends faster than
SDPA's pick, taken once from the :class:`~.session.Session` and read by each export and panel (``report``'s table
and JSON, the Markdown report, snapshots, the Prometheus collector, the dispatch panel), so that one drawing or
one document never mixes two readings of a session that records keep changing."""

from __future__ import annotations

from dataclasses import dataclass

from .faster import Faster
from .session import BackendRow, Session


@dataclass(frozen=True)
class ReportModel:
    session: Session  # for what is not computed: the workload, the environment, the dispatch, the peaks
    rows: tuple[BackendRow, ...]  # one per backend, in display order
    faster: tuple[Faster, ...]  # the enabled backends that beat SDPA's pick beyond the noise, fastest first

    @classmethod
    def of(cls, session: Session) -> "ReportModel":
        return cls(session, tuple(session.rows()), session.faster())
