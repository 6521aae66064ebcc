"""The engine's start-up phases (issue 12): recorded in order, consistent with what the UI sees."""

from __future__ import annotations

import time

import pytest

from sdpa_tui.core.backends import ALL_BACKENDS
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.engine_commands import Configure
from sdpa_tui.core.protocol.records import Accuracy, EngineError, Ready, Sample, StartupTimes
from sdpa_tui.core.protocol.wire_format import decode, encode
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.child.startup_times import PHASES, StartupClock
from sdpa_tui.engine.host.client import EngineClient
from sdpa_tui.exports.lab.report_data import report_dict

pytestmark = pytest.mark.torch_range

DEADLINE_S = 120.0  # a bound against hangs on a loaded machine, not a performance claim
TINY = Workload(batch=1, heads=2, kv_heads=2, seq=64, kv_seq=64, head_dim=32, dtype="fp32")
UP_TO_FIRST_SAMPLE = ("interpreter", "import_torch", "cuda_init", "ready", "configure", "inputs", "dispatch",
                      "pick_probe", "pick_prepare", "first_sample")


def test_clock_keeps_the_first_mark_of_each_phase_and_closes_when_complete():
    clock = StartupClock(spawned_at=time.monotonic())
    clock.mark("interpreter")
    clock.mark("import_torch")
    clock.mark("interpreter")  # a second mark changes nothing
    first = clock.record()
    assert first.phases == ("interpreter", "import_torch") and not first.complete
    done = clock.record(complete=True)
    clock.mark("ready")  # after the complete record: ignored
    assert clock.record().phases == ("interpreter", "import_torch") and done.complete
    with pytest.raises(ValueError):
        clock.mark("no such phase")


def test_steps_sum_to_the_last_phase_end_and_the_record_round_trips():
    times = StartupTimes(("interpreter", "import_torch", "ready"), (0.25, 2.5, 2.75), 100.0, True)
    steps = times.steps()
    assert [name for name, _ in steps] == list(times.phases)
    assert [took for _, took in steps] == pytest.approx([0.25, 2.25, 0.25])
    assert sum(took for _, took in steps) == pytest.approx(times.seconds[-1])
    assert decode(encode(times)) == times


def test_a_cpu_engine_reports_its_phases_in_order_and_on_the_ui_time_line():
    session = Session(TINY, ALL_BACKENDS)
    client = EngineClient("cpu")
    records: list = []
    startup_seen: float | None = None
    before_spawn = time.monotonic()
    client.start()
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not (session.startup and session.startup.complete):
            assert time.monotonic() < deadline, f"no complete StartupTimes within {DEADLINE_S:.0f} s: {records[-5:]!r}"
            batch = client.receive(timeout=0.2)
            for record in batch:
                assert not (isinstance(record, EngineError) and record.fatal), record.message
                session.apply(record)
                if isinstance(record, Ready):
                    client.send(Configure(session.next_config_id(), TINY, ALL_BACKENDS, profile_every_s=1.0))
                if isinstance(record, StartupTimes) and startup_seen is None:
                    startup_seen = time.monotonic()
            records.extend(batch)
            assert batch or client.alive, f"the engine died (exit code {client.exit_code})"
    finally:
        client.stop()
    startups = [r for r in records if isinstance(r, StartupTimes)]
    first, last = startups[0], startups[-1]
    # one record right after the first sample, and the complete one
    assert first.phases == UP_TO_FIRST_SAMPLE and not first.complete
    assert records.index(first) == next(i for i, r in enumerate(records) if isinstance(r, Sample)) + 1
    assert last.complete and last.phases[:len(UP_TO_FIRST_SAMPLE)] == UP_TO_FIRST_SAMPLE
    assert last.phases[-1] == "all_kernel_captures" and set(last.phases) <= set(PHASES)
    assert {"all_first_samples", "accuracy", "profiler_ready"} <= set(last.phases)
    assert "graph_capture" not in last.phases  # no CUDA graph on the CPU
    assert list(last.seconds) == sorted(last.seconds) and last.seconds[0] > 0
    assert sum(took for _, took in last.steps()) == pytest.approx(last.seconds[-1])
    # one monotonic clock for both processes: spawned after we asked, sent before we read it
    assert before_spawn <= first.spawned_at and first.spawned_at + first.seconds[-1] <= startup_seen + 1e-6
    # accuracy waits until every running backend had its first number
    first_samples = {r.backend: i for i, r in reversed(list(enumerate(records))) if isinstance(r, Sample)}
    accuracies = [i for i, r in enumerate(records) if isinstance(r, Accuracy)]
    assert accuracies and min(accuracies) > max(first_samples.values())
    report = report_dict(session)["startup"]
    assert report["complete"] and list(report["phases_end_s"]) == list(last.phases)


@pytest.mark.cuda
def test_on_a_gpu_the_first_sample_is_eager_and_the_graph_clock_follows():
    session = Session(TINY, ALL_BACKENDS)
    client = EngineClient("cuda")
    client.start()
    samples: dict = {}
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not samples or min(len(v) for v in samples.values()) < 2 or len(samples) < 2:
            assert time.monotonic() < deadline, f"too few samples within {DEADLINE_S:.0f} s: {samples!r}"
            for record in client.receive(timeout=0.2):
                assert not (isinstance(record, EngineError) and record.fatal), record.message
                session.apply(record)
                if isinstance(record, Ready):
                    client.send(Configure(session.next_config_id(), TINY, ALL_BACKENDS, profile_every_s=60.0))
                if isinstance(record, Sample):
                    samples.setdefault(record.backend, []).append(record)
    finally:
        client.stop()
    for backend, got in samples.items():
        assert got[0].gpu_method == "pending" and got[0].gpu_us is None, backend
        assert got[1].gpu_method in ("graph", "events") and got[1].gpu_us > 0, backend
