"""How fast fresh numbers follow a key press or a start, seen in the records an in-process
CPU engine sends (issue 12, items 6 and 7; issue 13, item 1). Nothing here is timed."""

from __future__ import annotations

import time

import pytest
from support.engine_fakes import NoOutput, Recorder

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.protocol.engine_commands import Configure, SetPaused
from sdpa_tui.core.protocol.records import Accuracy, BackendStatus, Dispatch, KernelCapture, PeakFlops, Sample
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.child.measuring_loop import Engine
from sdpa_tui.engine.child.run_state import latest_configure_only
from sdpa_tui.engine.measuring import clocks
from sdpa_tui.engine.measuring.cpu_threads import timing_threads
from sdpa_tui.engine.profiler.profiler_client import ProfilerClient

pytestmark = pytest.mark.torch_range

SMALL = Workload(batch=1, heads=1, kv_heads=1, seq=32, kv_seq=32, head_dim=16, dtype="fp32")
BOTH = (Backend.FLASH, Backend.MATH)


_PROFILERS: list[ProfilerClient] = []


@pytest.fixture(autouse=True)
def _close_profilers():
    yield
    while _PROFILERS:
        _PROFILERS.pop().close()


def cpu_engine() -> tuple[Engine, Recorder]:
    """An engine driven by hand (no ``run()`` loop), with its real profiler process."""
    channel = Recorder()
    engine = Engine(channel, "cpu", NoOutput())
    engine.profiler = ProfilerClient("cpu")
    _PROFILERS.append(engine.profiler)
    return engine, channel


def profiler_ready(engine: Engine, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not engine.profiler.poll_ready():
        assert time.monotonic() < deadline, "the profiler process never got ready"
        time.sleep(0.05)


def test_only_the_newest_configure_of_a_batch_is_set_up():
    first, second, third = (Configure(i, SMALL, BOTH) for i in (1, 2, 3))
    pause = SetPaused(True)
    assert latest_configure_only([first, pause, second, third]) == [pause, third]
    assert latest_configure_only([pause]) == [pause]


def test_sdpa_pick_has_a_number_before_the_other_backends_are_set_up():
    engine, channel = cpu_engine()
    engine.handle(Configure(1, SMALL, BOTH, sample_interval_s=0.25))
    records = channel.records
    pick = next(r for r in records if isinstance(r, Dispatch)).choice
    other = next(b for b in BOTH if b is not pick)
    first_sample = next(i for i, r in enumerate(records) if isinstance(r, Sample))
    other_ready = next(i for i, r in enumerate(records) if isinstance(r, BackendStatus) and r.backend is other)
    assert records[first_sample].backend is pick
    assert first_sample < other_ready


def test_the_matmul_peak_waits_for_every_backends_first_kernel_capture():
    engine, channel = cpu_engine()
    engine.handle(Configure(1, SMALL, BOTH, sample_interval_s=0.0))
    engine._send_peak_when_due()
    assert not any(isinstance(r, PeakFlops) for r in channel.records)
    profiler_ready(engine)
    for _ in range(4):  # two rounds: a burst each (a sample came with the set-up), then samples
        engine._measure_next()
        engine._send_peak_when_due()
    records = channel.records
    peak = next(i for i, r in enumerate(records) if isinstance(r, PeakFlops))
    captures = [i for i, r in enumerate(records) if isinstance(r, KernelCapture)]
    assert len(captures) == 2 and max(captures) < peak


def test_the_same_configuration_received_twice_is_set_up_once():
    engine, channel = cpu_engine()
    config = Configure(1, SMALL, BOTH, sample_interval_s=0.25)
    engine.handle(config)  # the app's, sent when it mounted
    runs = dict(engine.runs)
    assert all(run.samples == 1 for run in runs.values())
    engine.handle(config)  # the supervisor's, sent again when the engine said Ready
    assert sum(isinstance(r, Dispatch) for r in channel.records) == 1, "one set-up pass"
    assert engine.runs == runs and all(run.samples == 1 for run in runs.values()), "first numbers kept"
    engine.handle(Configure(2, SMALL, BOTH, sample_interval_s=0.25))  # a new one, the same content: a fresh pass
    assert sum(isinstance(r, Dispatch) for r in channel.records) == 2


def test_graphs_still_to_capture_are_due_at_once_and_the_accuracy_follows_them(monkeypatch):
    engine, channel = cpu_engine()
    engine.handle(Configure(1, SMALL, BOTH, sample_interval_s=60.0))  # every backend has its first number
    assert not any(isinstance(r, Accuracy) for r in channel.records), "the accuracy is the loop's, after the pass"
    captured = []
    monkeypatch.setattr(engine, "_capture_graph", lambda run: (captured.append(run.backend),
                                                               setattr(run, "graph_due", False)))
    for run in engine.runs.values():  # as on a GPU: the graph waits for the second slice
        run.graph_due = True
    engine._send_accuracies_when_due()
    assert not any(isinstance(r, Accuracy) for r in channel.records), "the kernels' names do not wait for it"
    assert engine._wait_time() == 0.0
    engine._measure_next()
    engine._measure_next()
    assert sorted(captured, key=BOTH.index) == list(BOTH), "each backend's capture without waiting its interval"
    assert engine._wait_time() == 0.0, "the accuracy is due"
    engine._send_accuracies_when_due()
    assert sorted((r.backend for r in channel.records if isinstance(r, Accuracy)), key=BOTH.index) == list(BOTH)
    assert engine._wait_time() > 50, "then the interval again"


def test_a_flag_change_before_the_accuracy_came_keeps_it_due_for_the_backends_kept(monkeypatch):
    engine, channel = cpu_engine()
    monkeypatch.setattr(engine, "_capture_graph", lambda run: setattr(run, "graph_due", False))
    engine.handle(Configure(1, SMALL, BOTH, sample_interval_s=60.0))
    for run in engine.runs.values():  # as on a GPU: the accuracy waits for the graphs
        run.graph_due = True
    engine.handle(Configure(2, SMALL, (Backend.MATH,), sample_interval_s=60.0))  # Flash switched off meanwhile
    engine._measure_next()  # MATH's fresh number
    engine._measure_next()  # its graph
    engine._send_accuracies_when_due()
    assert [(r.config_id, r.backend) for r in channel.records if isinstance(r, Accuracy)] == [(2, Backend.MATH)]


def test_a_flag_change_keeps_the_clocks_of_the_backends_still_on():
    engine, channel = cpu_engine()
    engine.handle(Configure(1, SMALL, BOTH, sample_interval_s=0.25))
    math = engine.runs[Backend.MATH]
    engine.handle(Configure(2, SMALL, (Backend.MATH,), sample_interval_s=0.25))
    assert engine.runs[Backend.MATH] is math
    assert Backend.FLASH not in engine.runs
    assert engine._wait_time() == 0.0, "the kept backend is due for a fresh number at once"
    engine._measure_next()
    fresh = [r for r in channel.records if isinstance(r, Sample) and r.config_id == 2]
    assert [r.backend for r in fresh] == [Backend.MATH]


def test_a_new_workload_sets_every_backend_up_again():
    engine, _ = cpu_engine()
    engine.handle(Configure(1, SMALL, BOTH))
    math = engine.runs[Backend.MATH]
    engine.handle(Configure(2, SMALL.with_changes(seq=64, kv_seq=64), BOTH))
    assert engine.runs[Backend.MATH] is not math


def test_each_slice_wakes_the_backend_before_it_is_timed(monkeypatch):
    engine, _ = cpu_engine()
    engine.handle(Configure(1, SMALL, (Backend.MATH,)))
    run = engine.runs[Backend.MATH]
    calls = []
    step = run.step
    run.step = lambda: (calls.append(1), step())[1]
    before_timing = []
    timed = clocks.eager_us
    monkeypatch.setattr(clocks, "eager_us", lambda *a: (before_timing.append(len(calls)), timed(*a))[1])
    run.samples = 0  # a timing slice, not a profiler burst
    engine._slice(run)
    assert before_timing and before_timing[0] > 0


def test_a_due_burst_waits_while_a_key_press_is_waiting_to_be_read():
    engine, channel = cpu_engine()
    engine.handle(Configure(1, SMALL, (Backend.MATH,), sample_interval_s=0.0))
    channel.waiting.append(Configure(2, SMALL, BOTH))  # the UI sent it; the engine has not read it yet
    engine._measure_next()  # the burst is due (one sample came with the set-up)
    engine._send_peak_when_due()
    assert not any(isinstance(r, (KernelCapture, PeakFlops)) for r in channel.records)
    channel.waiting.clear()
    profiler_ready(engine)
    engine._measure_next()
    assert any(isinstance(r, KernelCapture) for r in channel.records)


def test_on_the_cpu_the_engine_leaves_one_core_unless_the_user_chose():
    assert timing_threads(2, None) == 1
    assert timing_threads(64, None) == 63
    assert timing_threads(1, None) == 1
    assert timing_threads(2, "2") is None  # OMP_NUM_THREADS set: torch's choice stands


def test_a_configuration_received_while_paused_takes_no_sample():
    engine, channel = cpu_engine()
    engine.paused = True
    engine.handle(Configure(1, SMALL, BOTH))
    assert set(engine.runs) == set(BOTH)
    assert not any(isinstance(r, Sample) for r in channel.records)
