"""What a headless run (``report``, ``sweep``, watch's advice) waits for before a backend counts as measured."""

from __future__ import annotations

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.records import BackendStatus, KernelCapture, Sample
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.host import headless
from sdpa_tui.engine.host.headless import backend_finished, still_wanted


def measured(gpu_samples: int, method: str, beside_profiler_start: int = 0) -> Session:
    """A MATH row with kernels and 5 eager timings, ``gpu_samples`` of them with a GPU/call time, after
    ``beside_profiler_start`` timed while the profiler process was starting."""
    session = Session(Workload(), (Backend.MATH,))
    cid = session.config_id
    session.apply(BackendStatus(cid, Backend.MATH, "ok"))
    session.apply(KernelCapture(cid, Backend.MATH, (), (10.0,), None, 0.0))
    for _ in range(beside_profiler_start):
        session.apply(Sample(cid, Backend.MATH, None, 30.0, method, 10, 0.0, profiler_starting=True))
    for i in range(5):
        session.apply(Sample(cid, Backend.MATH, 10.0 if i < gpu_samples else None, 11.0, method, 10, 0.0))
    return session


def test_a_headless_run_on_a_gpu_waits_for_enough_gpu_clock_samples_too():
    """The GPU/call clock starts at a backend's second slice: a 1-s measurement (watch's advice) stopped at 5 eager
    timings had 4 GPU/call ones, and an fp32 call padded to Mem-efficient at half MATH's time was not advised."""
    assert headless.MIN_SAMPLES == 5
    short = measured(4, "graph")
    assert not backend_finished(short, Backend.MATH), "one GPU/call sample short"
    assert still_wanted(short, Backend.MATH) == "4/5 GPU/call timings"
    assert backend_finished(measured(5, "graph"), Backend.MATH)
    assert backend_finished(measured(0, "none"), Backend.MATH), "the CPU has no GPU clock to wait for"


def test_samples_timed_beside_the_profilers_start_do_not_count():
    """Four slowed samples then four timed apart: the four slowed ones left the window, so one more is wanted."""
    session = Session(Workload(), (Backend.MATH,))
    cid = session.config_id
    session.apply(BackendStatus(cid, Backend.MATH, "ok"))
    session.apply(KernelCapture(cid, Backend.MATH, (), (10.0,), None, 0.0))
    for starting in (True,) * 4 + (False,) * 4:
        session.apply(Sample(cid, Backend.MATH, None, 30.0 if starting else 11.0, "none", 10, 0.0,
                             profiler_starting=starting))
    assert not backend_finished(session, Backend.MATH)
    assert still_wanted(session, Backend.MATH) == "4/5 timings"
    session.apply(Sample(cid, Backend.MATH, None, 11.0, "none", 10, 0.0))
    assert backend_finished(session, Backend.MATH)
    assert backend_finished(measured(0, "none", beside_profiler_start=3), Backend.MATH)
