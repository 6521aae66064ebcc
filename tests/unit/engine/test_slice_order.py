"""The order of the engine's slices (issue 39): a backend's first number is eager, its graph (GPU/call, the kernels'
names) comes at its next slice, before its first kernel burst; SDPA's pick's graph before the other backends are set
up. The order is the same on a GPU; here no CUDA graph can be captured, so a stand-in clock is captured instead."""

from __future__ import annotations

import pytest
from support.engine_fakes import EagerGraphClock, InstantProfiler, NoOutput, Recorder

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.protocol.engine_commands import Configure
from sdpa_tui.core.protocol.records import BackendStatus, Dispatch, GraphKernels, KernelCapture, Sample, StartupTimes
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.child.measuring_loop import Engine
from sdpa_tui.engine.child.run_state import BackendRun
from sdpa_tui.engine.child.slice_order import SliceKind, next_run, slice_kind
from sdpa_tui.engine.measuring import clocks

SMALL = Workload(batch=1, heads=1, kv_heads=1, seq=32, kv_seq=32, head_dim=16, dtype="fp32")
BOTH = (Backend.FLASH, Backend.MATH)
NOW = 1000.0

pytestmark = pytest.mark.torch_range


def run(backend: Backend = Backend.FLASH, samples: int = 1, graph_due: bool = False, next_profile: float = 0.0,
        last_sample: float = NOW) -> BackendRun:
    return BackendRun(backend, step=None, per_call_us=10.0, graph_due=graph_due, next_profile=next_profile,
                      last_sample=last_sample, samples=samples)


# ------------------------------------------------------------------ the pure order
def test_a_graph_waiting_after_the_first_number_goes_before_a_due_burst():
    assert slice_kind(run(samples=1, graph_due=True), NOW) is SliceKind.GRAPH
    assert slice_kind(run(samples=1, graph_due=False), NOW) is SliceKind.BURST
    assert slice_kind(run(samples=1, next_profile=NOW + 5), NOW) is SliceKind.TIMING


def test_the_first_slice_is_eager_timing_never_a_capture_nor_a_burst():
    assert slice_kind(run(samples=0, graph_due=True), NOW) is SliceKind.TIMING
    assert slice_kind(run(samples=0), NOW) is SliceKind.TIMING


def test_a_waiting_graph_is_sliced_first_then_each_due_backend_in_turn():
    due = run(Backend.FLASH, last_sample=NOW - 10)
    waiting = run(Backend.MATH, graph_due=True)
    assert next_run([due, waiting], cursor=0, now=NOW, interval_s=1.0) == 1, "the graph before a due sample"
    resting = run(Backend.MATH, last_sample=NOW)
    assert next_run([due, resting], cursor=1, now=NOW, interval_s=1.0) == 0, "not due: the other one"
    both_due = [run(Backend.FLASH, last_sample=NOW - 10), run(Backend.MATH, last_sample=NOW - 10)]
    assert next_run(both_due, cursor=1, now=NOW, interval_s=1.0) == 1, "from the cursor on: each in turn"
    assert next_run([resting], cursor=0, now=NOW, interval_s=1.0) is None
    assert next_run([], cursor=0, now=NOW, interval_s=1.0) is None


# ------------------------------------------------------------------ the engine's records, in order
@pytest.fixture
def engine_with_graphs(monkeypatch) -> tuple[Engine, Recorder, InstantProfiler]:
    """An engine driven by hand on the CPU whose backends get a graph clock, as on a GPU, and whose profiler answers
    at once (every burst is due as soon as a backend has its first number)."""
    monkeypatch.setattr(clocks, "GraphClock", EagerGraphClock)
    channel, profiler = Recorder(), InstantProfiler()
    engine = Engine(channel, "cpu", NoOutput(), profiler=profiler)
    prepare = engine._prepare

    def prepared_with_a_graph_due(backend: Backend) -> BackendRun:
        prepared = prepare(backend)
        prepared.graph_due = True
        return prepared

    monkeypatch.setattr(engine, "_prepare", prepared_with_a_graph_due)
    return engine, channel, profiler


def events(records: list[object]) -> list[tuple[str, Backend]]:
    """What each record says of a backend: its eager-only number, its GPU/call number, its kernels named from the
    graph, a burst, it is ready."""
    out = []
    for r in records:
        if isinstance(r, Sample):
            out.append(("gpu/call" if r.gpu_us is not None else "eager", r.backend))
        elif isinstance(r, GraphKernels):
            out.append(("graph kernels", r.backend))
        elif isinstance(r, KernelCapture):
            out.append(("burst", r.backend))
        elif isinstance(r, BackendStatus) and r.status == "ok":
            out.append(("ready", r.backend))
    return out


def test_the_picks_gpu_call_and_kernels_follow_its_eager_number_before_the_others_are_set_up(engine_with_graphs):
    engine, channel, _ = engine_with_graphs
    engine._configure(Configure(1, SMALL, BOTH, sample_interval_s=0.0))
    pick = next(r for r in channel.records if isinstance(r, Dispatch)).choice
    other = next(b for b in BOTH if b is not pick)
    assert events(channel.records) == [
        ("ready", pick), ("eager", pick), ("graph kernels", pick), ("gpu/call", pick),
        ("ready", other), ("eager", other),
    ]
    phases = engine.startup.record().phases
    assert phases.index("first_sample") < phases.index("graph_kernels") < phases.index("first_gpu_call") \
        < phases.index("all_first_samples")
    first_record = next(r for r in channel.records if isinstance(r, StartupTimes))
    assert "first_gpu_call" not in first_record.phases, "the start-up record after the first number is sent at once"


def test_every_backends_graph_comes_before_its_first_burst(engine_with_graphs):
    engine, channel, profiler = engine_with_graphs
    engine._configure(Configure(1, SMALL, BOTH, sample_interval_s=0.0))
    pick = next(r for r in channel.records if isinstance(r, Dispatch)).choice
    other = next(b for b in BOTH if b is not pick)
    for _ in range(4):
        engine._measure_next()
    after_set_up = events(channel.records)[6:]
    assert after_set_up[:2] == [("graph kernels", other), ("gpu/call", other)], "the graph waiting goes first"
    assert sorted(profiler.requests, key=BOTH.index) == list(BOTH), "then each backend's burst"
    seen = events(channel.records)
    for backend in BOTH:
        assert seen.index(("graph kernels", backend)) < seen.index(("burst", backend)), backend
