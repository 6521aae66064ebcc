"""When watch's profiler windows start and stop, on a clock the test drives: the schedule, the budget that holds the
windows' cost under a share of the program's time, what each window's cost counts, and how many windows a short
training program gets."""

from __future__ import annotations

import os

import pytest

from sdpa_tui.core.calls.call_signature import CallSignature
from sdpa_tui.core.calls.watched_calls import CallStats
from sdpa_tui.watch.probe.kernels import bursts, cupti_detach
from sdpa_tui.watch.probe.kernels.cupti_detach import ENV, OURS
from sdpa_tui.watch.probe.kernels.profile_readings import WANTED_SAMPLES, Entry
from sdpa_tui.watch.probe.slow_path import Probe


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    """The windows' clock, and Kineto's detach setting left as the test found it."""
    fake = Clock()
    monkeypatch.setattr(bursts.time, "monotonic", fake)
    monkeypatch.setattr(cupti_detach.time, "monotonic", fake)
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.delenv(OURS, raising=False)
    return fake


def test_the_schedule_samples_for_drift_from_30_s_on_not_at_3_s(clock):
    windows = bursts.KernelBursts()
    windows.arm()
    clock.now += 3.5
    assert not windows.poll(), "a short program's signatures are sampled by their own windows"
    clock.now += 30.0 - 3.5
    assert windows.poll()
    assert windows.next_due() == pytest.approx(clock.now + bursts.EVERY_S)


def test_a_scheduled_window_waits_until_the_windows_cost_is_within_the_budget(clock):
    born = clock.now  # the probe installed as the program starts
    windows = bursts.KernelBursts()
    windows.arm()
    windows.captures.stop_s = 1.0  # the first windows cost a second
    clock.now += 30.0
    assert not windows.poll(), "1 s is more than the budget's share of 30 s"
    clock.now = born + 1.0 / bursts.BUDGET
    assert windows.poll(), "due once the program has run long enough for that second to be within it"


def test_only_a_signatures_first_windows_go_over_the_budget(clock):
    windows = bursts.KernelBursts()
    windows.captures.profiled_s = 2.0  # far over the budget's share of the 60 s below
    clock.now += 60.0
    windows.cover(never_profiled=False)
    assert not windows.due, "a signature that has some samples waits for the budget"
    windows.cover(never_profiled=True)
    assert windows.due, "a signature no window has sampled is profiled at once"
    windows.start()
    windows.calls = bursts.MIN_BURST_CALLS
    windows.stop(wanted_left=True, sampled=2)  # the window went to first calls (plans built)
    windows.cover(never_profiled=False)
    assert windows.due, "the window after one spent on first calls is part of a signature's first"
    windows.start()
    windows.stop(wanted_left=True, sampled=bursts.MIN_BURST_CALLS)
    clock.now += bursts.MIN_GAP_S * 10
    windows.cover(never_profiled=False)
    assert not windows.due


def test_a_windows_cost_counts_its_start_and_its_export(clock, monkeypatch):
    """Starting a window (attaching CUPTI again after a detach) and exporting its trace (Kineto holds the GIL) cost the
    program as its profiled time and its stop do; the budget counts them all."""
    profiling(monkeypatch, clock, start_s=0.2, stop_s=0.15, export_s=0.3)
    windows = bursts.KernelBursts()
    windows.due = True
    windows.start()
    clock.now += 0.1
    windows.stop()
    windows.export_all()
    c = windows.captures
    assert (c.start_s, c.profiled_s, c.stop_s, c.export_s) == pytest.approx((0.2, 0.1, 0.15, 0.3))
    assert c.cost_s == pytest.approx(0.75)
    assert c.to_dict()["start_s"] == 0.2 and c.to_dict()["export_s"] == 0.3
    assert type(c).from_dict(c.to_dict()).cost_s == pytest.approx(0.75)
    assert windows.exported == ["trace.json"]


def test_only_a_compiled_graphs_calls_make_a_window_record_shapes(monkeypatch):
    """Shapes are what a compiled graph's ops are matched by; an eager call is found by its range, and recording every
    op's shapes costs each op in the window and makes its trace larger."""
    probe = Probe(None)
    asked = []
    monkeypatch.setattr(probe.bursts, "start", lambda record_shapes=True: asked.append(record_shapes))
    signature = CallSignature((2, 8, 512, 64), (2, 8, 512, 64), "torch.bfloat16", "cuda:0", grad=True)
    probe.sink.add(CallStats(signature), cuda=True)
    probe.bursts.due = True
    probe.burst_tick()
    probe.sink.add(CallStats(signature, compiled=True), cuda=True)
    probe.burst_tick()
    assert asked == [False, True]


def profiling(monkeypatch, clock: Clock, start_s: float, stop_s: float, export_s: float) -> None:
    """torch.profiler.profile as a window uses it, and the export of its trace, on the test's clock: each costs the
    time given."""

    class FakeProfiler:
        def __init__(self, **_) -> None:
            pass

        def start(self) -> None:
            clock.now += start_s

        def stop(self) -> None:
            clock.now += stop_s

    monkeypatch.setattr("torch.profiler.profile", FakeProfiler)
    monkeypatch.setattr(bursts, "export", lambda profiler: setattr(clock, "now", clock.now + export_s) or "trace.json")


def train(clock: Clock, probe: Probe, seconds: float, step_s: float = 0.059, layers: int = 8,
          first_cuda_s: float = 3.0, export_s: float = 0.1) -> int:
    """A training program as watch's probe sees it from its start (now): the model built for ``first_cuda_s``, then
    steps of ``layers`` calls of one signature until ``seconds`` after the start; the probe's background thread polls every half second
    and exports a stopped window at once. A window's samples count when it stops (the reading comes a little later in
    the program). Returns how many windows ran."""
    windows = probe.bursts
    signature = CallSignature((8, 16, 1024, 128), (8, 4, 1024, 128), "torch.bfloat16", "cuda:0", causal=True,
                              gqa=True, grad=True)
    entry = None
    end, polled = clock.now + seconds, clock.now
    clock.now += first_cuda_s
    while clock.now < end:
        for _ in range(layers):
            if entry is None:  # the signature's first call
                entry = probe.sink.add(CallStats(signature), cuda=True)
                windows.signature_seen()
            entry.count += 1
            if entry.wanted and not windows.due and not windows.active:
                windows.cover(never_profiled=entry.profiled == 0)
            was_active = windows.active
            probe.burst_tick()
            if was_active and not windows.active:  # stopped: read at once
                entry.profiled += probe.in_burst.get(entry.index, 0)
                entry.wanted = entry.profiled < entry.needed
                windows.export_all()
            if windows.active:
                windows.calls += 1
                probe.in_burst[entry.index] = probe.in_burst.get(entry.index, 0) + (entry.count > 1)
            clock.now += step_s / layers
        if clock.now - polled >= 0.5:
            polled = clock.now
            windows.poll()
    return windows.captures.count


@pytest.mark.parametrize("seconds, expected", [(10.0, 1), (60.0, 2), (400.0, 3)])
def test_a_training_program_gets_its_first_window_then_one_at_30_s_and_every_300_s(clock, monkeypatch, seconds,
                                                                                   expected):
    """H100, 2026-11-25: a 12-s training program ran 7 windows (+19 % in total), a 53-s one 8 (+7.2 %); the window at 3 s
    was one of each, the dearest (64 calls). Each window here costs about what one did there (0.5 s: a start, two
    steps profiled, a stop, an export; docs/lab-notes/watch-truth.md): a 10-s program
    pays for its signature's first window alone, a minute's for one more (drift), each under 3 % in total."""
    profiling(monkeypatch, clock, start_s=0.05, stop_s=0.25, export_s=0.1)
    born = clock.now
    probe = Probe(None)
    assert train(clock, probe, seconds) == expected
    captures = probe.bursts.captures
    assert 0.3 < captures.cost_s / expected < 0.6, captures
    assert captures.cost_s / (clock.now - born) < {10.0: 0.08, 60.0: 0.03, 400.0: 0.03}[seconds]


def test_a_window_holding_training_calls_ends_only_after_their_backward():
    """A window ends once its signatures have their samples; a training call's backward runs after the step's forward
    calls, and its kernels are read from the same window: the window waits for it (at least one backward is in it,
    whatever the number of layers)."""
    import torch

    from sdpa_tui.watch.probe.fast_path import make_wrapper

    probe = Probe(None)
    sdpa = make_wrapper(torch.nn.functional.scaled_dot_product_attention, probe)
    probe.bursts.due = probe.special = True
    x = torch.randn(1, 2, 8, 4, requires_grad=True)
    layers = [sdpa(x, x, x) for _ in range(3)]
    try:
        assert probe.bursts.active and probe.in_burst == {0: 2}
        assert not probe.covered(), "its samples are in, its backward is not"
        sum(out.sum() for out in layers).backward(retain_graph=True)
        assert probe.covered()
        probe.bursts.stop()
        probe.bursts.due = probe.special = True
        again = sdpa(x, x, x)
        assert probe.bursts.active and not probe.covered(), "the last window's backward does not count in this one"
        layers[0].sum().backward()  # the hook left from the last window fires again
        assert not probe.covered()
        again.sum().backward()
        assert probe.covered()
    finally:
        probe.bursts.stop()
        probe._stop.set()


def cuda_like(monkeypatch) -> None:
    """The CPU's signatures want a CUDA signature's samples (on the CPU one profiled call covers a signature)."""
    monkeypatch.setattr(Entry, "needed", property(lambda entry: WANTED_SAMPLES))


def test_a_window_opened_by_an_evaluations_few_calls_ends_one_training_step_after_them(clock, monkeypatch):
    """The large Llama on an H200 (2026-11-28): its evaluation every 50 steps makes 8 calls of a signature of its own,
    the first building plans, so its first window reads 7 samples of the 8 wanted. That window stayed open for its half
    second: 7 training steps around it, their backward in its trace, about as dear as the first window. It now ends
    once the evaluation's signature has gone by: one training step later, that step's backward run."""
    import torch

    from sdpa_tui.watch.probe.fast_path import make_wrapper

    profiling(monkeypatch, clock, start_s=0.0, stop_s=0.0, export_s=0.0)
    cuda_like(monkeypatch)
    probe = Probe(None)
    sdpa = make_wrapper(torch.nn.functional.scaled_dot_product_attention, probe)
    layers, x = 8, torch.randn(1, 2, 8, 4, requires_grad=True)
    held_out = torch.randn(1, 2, 4, 4)

    def step() -> None:
        outs = []
        for _ in range(layers):
            outs.append(sdpa(x, x, x))
            clock.now += 0.059 / layers  # the Llama's step
        sum(out.sum() for out in outs).backward()

    try:
        step()
        (training,) = probe.entries
        training.profiled = training.needed  # its own windows have read its samples
        probe.bursts.due = probe.special = True  # as the evaluation's first CUDA call makes a window due
        with torch.no_grad():
            for _ in range(layers):
                sdpa(held_out, held_out, held_out)
                clock.now += 0.002
        evaluation = probe.entries[1]
        assert probe.bursts.active and probe.in_burst[evaluation.index] == layers - 1
        steps = 0
        while probe.bursts.active and steps < 10:
            step()
            steps += 1
        assert not probe.bursts.active
        assert (steps, probe.bursts.calls) == (2, 2 * layers + 1), "the evaluation's calls, a step, its backward"
        assert probe.bursts.captures.count == 1
        assert evaluation.profiled + probe.in_burst[evaluation.index] < evaluation.needed  # still wanted: a later
        # window reads the rest
    finally:
        probe.bursts.stop()
        probe._stop.set()


def test_a_window_for_a_drift_check_still_waits_for_its_training_calls_backward(clock, monkeypatch):
    """Every signature covered, none short of samples: nothing goes by, the window ends on its samples and the
    backward, as before."""
    import torch

    from sdpa_tui.watch.probe.fast_path import make_wrapper

    profiling(monkeypatch, clock, start_s=0.0, stop_s=0.0, export_s=0.0)
    cuda_like(monkeypatch)
    probe = Probe(None)
    sdpa = make_wrapper(torch.nn.functional.scaled_dot_product_attention, probe)
    x = torch.randn(1, 2, 8, 4, requires_grad=True)
    try:
        sdpa(x, x, x).sum().backward()
        (training,) = probe.entries
        training.profiled = training.needed
        probe.bursts.due = probe.special = True  # the schedule's window
        outs = [sdpa(x, x, x) for _ in range(3 * training.needed)]
        assert probe.bursts.active, "its backward has not run"
        sum(out.sum() for out in outs).backward()
        sdpa(x, x, x)
        assert not probe.bursts.active
    finally:
        probe.bursts.stop()
        probe._stop.set()


@pytest.mark.parametrize("spent_s, sampled, detaches", [(1.0, bursts.MIN_BURST_CALLS, True),
                                                        (0.01, bursts.MIN_BURST_CALLS, False),
                                                        (1.0, 0, False)])
def test_a_window_leaving_a_signature_short_detaches_cupti_only_when_no_window_for_it_can_come_soon(
        clock, monkeypatch, spent_s, sampled, detaches):
    """The Llama on an H200 (2026-11-28): after its evaluation's window (7 samples of 8) Kineto kept CUPTI attached
    for the rest of the run, every launch paying for it (its median step +0.5 and +1.3 % against plain, where runs
    whose evaluation was covered detached). 20 s into a program whose windows have cost ``spent_s``: 1 s holds the
    next window back past ``DETACH_AFTER_S`` (CUPTI detached), 0.01 s does not; a window spent on first calls is
    followed at once (never detached)."""
    profiling(monkeypatch, clock, start_s=0.0, stop_s=0.0, export_s=0.0)
    monkeypatch.setattr(bursts.torch.cuda, "is_initialized", lambda: True)
    windows = bursts.KernelBursts()
    clock.now += 20.0
    windows.captures.profiled_s = spent_s
    windows.due = True
    windows.start()
    clock.now += 0.1
    windows.stop(wanted_left=True, sampled=sampled)
    assert (os.environ.get(ENV) == "1") is detaches
    assert windows.captures.detached == int(detaches)
