"""What keeps the engine's host memory flat over hours (docs/lab-notes/faults.md, benchmarks/soak/engine_memory.py)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest
import torch
from support.engine_fakes import NoOutput, Recorder
from torch.profiler import profile

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.protocol.engine_commands import Configure
from sdpa_tui.core.protocol.records import KernelCapture, Recycling
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.child import host_memory, measuring_loop
from sdpa_tui.engine.child.measuring_loop import Engine
from sdpa_tui.engine.child.run_state import next_profile_interval
from sdpa_tui.engine.measuring import quality
from sdpa_tui.engine.profiler import profiler_guard, profiling
from sdpa_tui.engine.profiler.profiler_client import ProfilerClient

pytestmark = pytest.mark.torch_range


def test_a_burst_leaves_no_profiler_for_the_collector_to_find():
    # torch.profiler.profile sits in a reference cycle holding the whole Kineto result; the
    # automatic collector is off here, so only the burst's own collection can free it.
    gc.collect()
    gc.disable()
    try:
        result = profiling.burst(lambda: torch.ones(64) * 2, torch.device("cpu"), 3)
        alive = [o for o in gc.get_objects() if type(o) is profile]
    finally:
        gc.enable()
    assert result.trace["traceEvents"], "the burst still returns its trace"
    assert alive == []


def test_the_guard_counts_a_real_profiler_session_in_this_process():
    # what the engine reports as EngineHealth.profiler_starts (0 there, by design)
    profiler_guard.install()
    before = profiler_guard.starts()
    with profile():
        torch.ones(8) * 2
    assert profiler_guard.starts() > before


def intervals(config: Configure, n: int) -> list[float]:
    out, interval = [], 0.0
    for _ in range(n):
        interval = next_profile_interval(interval, config)
        out.append(interval)
    return out


def test_bursts_back_off_while_the_workload_stays_the_same():
    config = Configure(1, Workload(), (Backend.MATH,), profile_every_s=5.0, profile_every_max_s=60.0)
    assert intervals(config, 7) == [5.0, 10.0, 20.0, 40.0, 60.0, 60.0, 60.0]


def test_without_a_maximum_bursts_keep_their_interval():
    assert intervals(Configure(1, Workload(), (Backend.MATH,), profile_every_s=1.0), 3) == [1.0, 1.0, 1.0]


# ------------------------------------------------------------------ replacing a grown engine


@pytest.fixture(scope="module")
def profiler_process() -> Iterator[ProfilerClient]:
    """A real profiler process for the bursts of the module's engines: one, as an engine keeps one while bursts come
    (each start imports torch: seconds)."""
    client = ProfilerClient("cpu")
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def engine_on_cpu(monkeypatch, profiler_process) -> Callable[[list[float]], tuple[Engine, Recorder]]:
    """Makes an engine in this process whose RSS reads as ``rss_readings``, one per look, with the module's
    profiler process for its bursts."""

    def make(rss_readings: "list[float] | Callable[[], float]") -> tuple[Engine, Recorder]:
        readings = iter(rss_readings) if isinstance(rss_readings, list) else None
        monkeypatch.setattr(host_memory, "rss_mib", rss_readings if readings is None else lambda: next(readings))
        monkeypatch.setattr(measuring_loop, "RSS_CHECK_EVERY_S", 0.0)
        # the matmul peak is part of a dtype's first use; its seconds of CPU matmuls are not under test
        monkeypatch.setattr(quality, "matmul_peak_tflops", lambda dtype, device: (1.0, "not measured here"))
        channel = Recorder()
        engine = Engine(channel, "cpu", NoOutput())
        engine.profiler = profiler_process
        return engine, channel

    return make


def measure(engine: Engine, config: Configure, slices: int) -> None:
    """``slices`` turns of the engine's loop, waiting out the profiler process's start (its
    first burst is due then)."""
    engine.handle(config)
    engine.profiler.wait_ready()
    for _ in range(slices):
        engine._measure_next()
        engine._check_growth()
        if engine.stopping:
            return
        engine._send_peak_when_due()


SMALL = Workload(batch=1, heads=1, kv_heads=1, seq=32, kv_seq=32, head_dim=16, dtype="fp32")


def test_an_engine_that_grew_past_its_allowance_stops_to_be_replaced(engine_on_cpu):
    # the first look is the baseline (once settled: first burst, peak); the next ones grow by 600 MiB
    engine, channel = engine_on_cpu([1000.0, 1300.0, 1600.0, 1900.0])
    measure(engine, Configure(1, SMALL, (Backend.MATH,), profile_every_s=0.0, recycle_growth_mib=512.0), 20)
    assert engine.recycled and engine.stopping
    recycling = [r for r in channel.records if isinstance(r, Recycling)]
    assert recycling == [Recycling(1600.0, 1000.0)]


def test_an_engine_within_its_allowance_goes_on(engine_on_cpu):
    engine, channel = engine_on_cpu([1000.0] + [1400.0] * 50)
    measure(engine, Configure(1, SMALL, (Backend.MATH,), profile_every_s=0.0, recycle_growth_mib=512.0), 20)
    assert not engine.recycled and not engine.stopping
    assert not any(isinstance(r, Recycling) for r in channel.records)
    captures = [r for r in channel.records if isinstance(r, KernelCapture)]
    assert captures and captures[0].kernels, "the baseline comes after a burst (from the profiler process)"


def test_without_an_allowance_the_engine_never_reads_its_memory(engine_on_cpu):
    engine, _ = engine_on_cpu([])  # a look would raise StopIteration
    measure(engine, Configure(1, SMALL, (Backend.MATH,), profile_every_s=0.0), 20)
    measure(engine, Configure(2, replace(SMALL, seq=64, kv_seq=64), (Backend.MATH,), profile_every_s=0.0), 20)
    assert not engine.recycled


def test_what_a_new_workload_loads_is_not_growth_but_growth_on_a_known_one_is(engine_on_cpu):
    # As the H100 soak saw (2026-11-23): the RSS steps at a workload's first use, then stays.
    rss = {"mib": 1000.0}
    engine, channel = engine_on_cpu(lambda: rss["mib"])
    allowance = 256.0

    def run(config_id: int, workload: Workload) -> None:
        measure(engine, Configure(config_id, workload, (Backend.MATH,), profile_every_s=0.0,
                                  recycle_growth_mib=allowance), 10)

    run(1, SMALL)
    assert engine._growth.baseline_mib == 1000.0
    longer = replace(SMALL, seq=64, kv_seq=64)
    engine.handle(Configure(2, longer, (Backend.MATH,), profile_every_s=0.0, recycle_growth_mib=allowance))
    rss["mib"] = 1400.0  # the first use of `longer` loads 400 MiB, more than the allowance
    run(2, longer)
    assert not engine.recycled and engine._growth.baseline_mib == 1400.0
    run(3, SMALL)  # a workload this engine ran before: nothing new to load
    assert not engine.recycled
    rss["mib"] = 1700.0  # grown while running known workloads: that is growth
    run(4, SMALL)
    assert engine.recycled
    assert [r for r in channel.records if isinstance(r, Recycling)] == [Recycling(1700.0, 1400.0)]


class FakeClient:
    """An engine process that ends after sending its records (``exit_code`` as given)."""

    started: list["FakeClient"] = []

    def __init__(self, records: list[object], exit_code: int) -> None:
        self._records, self.exit_code, self.sent, self.pid = list(records), exit_code, [], 1000

    def start(self) -> None:
        FakeClient.started.append(self)

    def send(self, record: object) -> bool:
        self.sent.append(record)
        return True

    def receive(self, timeout: float = 0.0) -> list[object]:
        records, self._records = self._records, []
        return records

    @property
    def alive(self) -> bool:
        return bool(self._records)

    def stop(self, timeout: float = 5.0) -> None:
        pass


def test_a_recycled_engine_is_replaced_at_once_not_counted_as_a_death():
    from support.real_data import H200

    from sdpa_tui.core.protocol.engine_events import EngineRecycled, EngineStarting
    from sdpa_tui.core.protocol.records import Ready
    from sdpa_tui.engine.host.supervisor import EngineSupervisor

    ready = Ready(H200)
    scripts = iter([([ready, Recycling(2100.0, 1000.0)], 5), ([ready], None)])
    FakeClient.started = []
    events: list[object] = []
    second_started = threading.Event()

    def factory(device: str) -> FakeClient:
        records, code = next(scripts, ([ready], None))
        if len(FakeClient.started) == 1:
            second_started.set()
        return FakeClient(records, code)

    supervisor = EngineSupervisor("cuda", on_records=lambda rs: None, on_event=events.append,
                                  client_factory=factory, backoff_s=(60.0,))
    supervisor.configure(Configure(3, SMALL, (Backend.MATH,)))
    supervisor.start()
    try:
        assert second_started.wait(5.0), "a new engine starts without waiting out a backoff"
    finally:
        supervisor.stop()
    # no EngineDied and no backoff in between; the replacement is a first attempt, not a retry
    assert events[:3] == [EngineStarting(1), EngineRecycled(1100.0), EngineStarting(1)]
    assert Configure(3, SMALL, (Backend.MATH,)) in FakeClient.started[1].sent, "the new engine gets the workload"


def test_what_the_dispatch_probe_loads_for_a_new_dtype_is_a_first_use_too(engine_on_cpu, monkeypatch):
    # The CPU soak of 2026-11-23 replaced the engine at its first bf16 workload: the dispatch
    # probe, before any backend is set up, ran the first bf16 SDPA call.
    rss = {"mib": 1000.0}
    engine, _ = engine_on_cpu(lambda: rss["mib"])
    choose = measuring_loop.eligibility.choose

    def loading_choose(inputs, *args, **kwargs):
        if inputs.q.dtype == torch.bfloat16:
            rss["mib"] = 1300.0
        return choose(inputs, *args, **kwargs)

    monkeypatch.setattr(measuring_loop.eligibility, "choose", loading_choose)
    measure(engine, Configure(1, SMALL, (Backend.MATH,), profile_every_s=0.0, recycle_growth_mib=64.0), 10)
    measure(engine, Configure(2, replace(SMALL, dtype="bf16"), (Backend.MATH,), profile_every_s=0.0,
                              recycle_growth_mib=64.0), 10)
    assert not engine.recycled
    assert engine._growth.baseline_mib == 1300.0


def test_a_slow_burst_spaces_the_next_by_its_own_cost():
    """Under load a burst took seconds and headless runs asked for one a second: the engine mostly waited for the
    profiler and rarely got the timings a result needs (issue 21, item 1)."""
    from sdpa_tui.engine.child.run_state import CAPTURE_SPACING

    config = Configure(1, Workload(), (Backend.MATH,), profile_every_s=1.0)
    assert next_profile_interval(0.0, config, capture_s=0.05) == 1.0
    assert next_profile_interval(1.0, config, capture_s=2.5) == CAPTURE_SPACING * 2.5


def test_when_time_is_up_the_report_has_its_numbers_marked_as_few(monkeypatch):
    """On a busy machine `report` ran 601 s and failed with nothing: it must end with the samples it has, said
    (issue 21, item 1). MIN_SAMPLES is set out of reach, so time always runs out."""
    from sdpa_tui.engine.host import headless
    from sdpa_tui.exports.lab.report_data import report_dict

    monkeypatch.setattr(headless, "MIN_SAMPLES", 10**6)
    session = headless.measure(Workload(batch=1, heads=2, kv_heads=2, seq=64, kv_seq=64, head_dim=32, dtype="fp32"),
                               (Backend.FLASH, Backend.MATH), device="cpu", duration_s=0.5, timeout_s=25.0)
    assert session.incomplete.startswith("time was up after 25 s: few samples")
    assert "Flash:" in session.incomplete and "timings" in session.incomplete
    assert all(len(session.backends[b].eager) >= 1 for b in (Backend.FLASH, Backend.MATH))
    assert report_dict(session)["incomplete"] == session.incomplete
