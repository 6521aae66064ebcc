"""Lab sessions made up for the advice's tests: which backends ran, with which eager samples."""

from __future__ import annotations

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.records import BackendStatus, Dispatch, Sample
from sdpa_tui.core.workload import Workload


def lab(eager_us: dict[Backend, list[float]]) -> Session:
    """A lab session of a CPU workload: these backends ran, with these eager samples."""
    session = Session(Workload(dtype="fp32"))
    session.apply(Dispatch(0, Backend.FLASH, ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH", "CUDNN_ATTENTION"), ""))
    for backend, values in eager_us.items():
        session.apply(BackendStatus(0, backend, "ok"))
        for v in values:
            session.apply(Sample(0, backend, None, v, "none", 10, 0.0))
    return session
