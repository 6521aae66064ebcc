"""How far ahead of the GPU the watched program's host makes its calls, and what the advice does with it.

The lead is read two ways: a profiled window's backward from the trace's launch and kernel times
(``core/traces/call_profile.py``), and a call's start outside the windows from a CUDA event against an anchor
(``watch/probe/host_lead.py``, driven here with a fake event: no GPU on the CPU). The advice holds packed attention to
GPU/call only where the host's lead covers the host time the code adds over one batch's calls
(``core/calls/advice.host_room``).
"""

from __future__ import annotations

import pytest

from sdpa_tui.core.calls.advice import Alternative, Beside, HostLead, Measured, host_room
from sdpa_tui.core.calls.call_signature import CallSignature
from sdpa_tui.core.calls.packed_alternative import CallClocks, PackedCost
from sdpa_tui.core.calls.watch_report import BackwardRow, CallRow
from sdpa_tui.core.calls.watched_calls import BackwardStats, CallStats
from sdpa_tui.core.stats import Summary
from sdpa_tui.core.traces.call_profile import read_calls
from sdpa_tui.watch.probe import host_lead
from sdpa_tui.watch.probe.kernels.profile_readings import Entry
from sdpa_tui.watch.report.report_text import host_lead_text

SIG = CallSignature((8, 16, 2048, 64), (8, 16, 2048, 64), "torch.bfloat16", "cuda:0", "bool", (8, 1, 2048, 2048),
                    grad=True)


def _x(name, cat, ts, dur, tid, **args):
    return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "pid": 1, "tid": tid, "args": args}


def test_a_profiled_backward_carries_how_far_ahead_of_the_gpu_its_first_kernel_was_launched():
    events = [
        _x("sdpa-tui#0", "user_annotation", 0, 100, 1),
        _x("aten::_scaled_dot_product_flash_attention", "cpu_op", 10, 80, 1, **{"Sequence number": 7}),
        _x("cudaLaunchKernel", "cuda_runtime", 20, 5, 1, correlation=1),
        _x("flash_fwd_kernel", "kernel", 30, 50, 0, correlation=1),
        # autograd's thread, later: the backward's launches 1,000 µs before the GPU gets to them, then 40
        _x("autograd::engine::evaluate_function: ScaledDotProductFlashAttentionBackward0", "cpu_op", 200, 300, 2,
           **{"Sequence number": 7}),
        _x("cudaLaunchKernel", "cuda_runtime", 210, 10, 2, correlation=2),
        _x("cudaLaunchKernel", "cuda_runtime", 300, 10, 2, correlation=3),
        _x("flash_bwd_dq_dk_dv", "kernel", 1220, 400, 0, correlation=2),
        _x("flash_bwd_convert_dq", "kernel", 1650, 20, 0, correlation=3),
    ]
    (call,) = read_calls({"traceEvents": events}, "sdpa-tui#").ranged
    assert [a.name for a in call.backward] == ["flash_bwd_dq_dk_dv", "flash_bwd_convert_dq"]
    assert call.backward_lead_us == pytest.approx(1220 - 220)  # its first kernel's start after its launch returned
    assert call.backward[1].lead_us == pytest.approx(1650 - 310)


class FakeEvent:
    """A CUDA event on a fake GPU clock: ``elapsed_time`` is the difference of the GPU times given to it."""

    gpu_ms_at_record: list[float] = []

    gpu_idle = False  # events recorded meanwhile are passed at once

    def __init__(self, enable_timing: bool = False) -> None:
        self.gpu_ms = None
        self.passed = False

    def record(self) -> None:
        self.gpu_ms = FakeEvent.gpu_ms_at_record.pop(0)
        self.passed = FakeEvent.gpu_idle

    def query(self) -> bool:
        return self.passed

    def elapsed_time(self, other: "FakeEvent") -> float:
        return other.gpu_ms - self.gpu_ms


@pytest.fixture
def fake_gpu(monkeypatch):
    now = {"s": 100.0}
    monkeypatch.setattr(host_lead.torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(host_lead.torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(host_lead.torch.cuda, "is_current_stream_capturing", lambda: False)
    monkeypatch.setattr(host_lead.time, "perf_counter", lambda: now["s"])
    return now


def _entry(index: int = 0) -> Entry:
    return Entry(CallStats(SIG), index, cuda=True)


def _anchor(clock, entries=(), gpu_ms: float = 0.0) -> None:
    """The clocks meet at the fake host's time and GPU time ``gpu_ms``: the GPU is idle, each of the anchor's events
    passed as it is recorded."""
    FakeEvent.gpu_ms_at_record[:0] = [gpu_ms] * host_lead.ANCHOR_EVENTS
    FakeEvent.gpu_idle = True
    try:
        clock.anchor_now(entries)
    finally:
        FakeEvent.gpu_idle = False


def test_a_calls_lead_is_its_events_gpu_time_against_the_anchor_less_the_hosts_time_at_the_call(fake_gpu):
    import torch

    clock = host_lead.LeadClock()
    FakeEvent.gpu_ms_at_record = [5_003.5]  # the call's event 3.5 ms after the anchor
    _anchor(clock, gpu_ms=5_000.0)  # host 100.000 s: the GPU idle, so it meets the host's clock here
    fake_gpu["s"] = 100.001  # the call is made 1 ms later on the host: the GPU gets to it 2.5 ms after that
    entry = _entry()
    clock.sample(entry, torch.device("cuda", 0))
    clock.collect()
    assert entry.stats.lead_us == []  # the GPU has not passed the event yet: nothing read
    clock.pending[0][4].passed = True
    clock.collect()
    assert entry.stats.lead_us == [pytest.approx(2_500.0)]
    assert not clock.pending


class TimelineEvent:
    """A CUDA event on a fake GPU shared with another process: recorded at the fake host's time, run by the GPU at
    ``TimelineEvent.runs_at(host seconds at record)`` (host seconds; GPU time equal to it), seen passed once the host's
    clock is there."""

    timeline: dict = {}

    def __init__(self, enable_timing: bool = False) -> None:
        self.runs_s = None

    def record(self) -> None:
        self.runs_s = TimelineEvent.timeline["runs_at"](TimelineEvent.timeline["now"])

    def query(self) -> bool:
        return TimelineEvent.timeline["now"] >= self.runs_s

    def elapsed_time(self, other: "TimelineEvent") -> float:
        return (other.runs_s - self.runs_s) * 1e3


@pytest.fixture
def shared_gpu(monkeypatch):
    """The host's clock steps 1 µs a reading, and the first ``late`` readings after a pass may be skipped (the host
    took the core from the polling thread)."""
    line = {"now": 100.0, "late": {}}
    TimelineEvent.timeline = line

    def perf_counter() -> float:
        line["now"] += 1e-6
        line["now"] += line["late"].pop(round(line["now"] * 1e6), 0.0)
        return line["now"]

    monkeypatch.setattr(host_lead.torch.cuda, "Event", TimelineEvent)
    monkeypatch.setattr(host_lead.torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(host_lead.torch.cuda, "is_current_stream_capturing", lambda: False)
    monkeypatch.setattr(host_lead.time, "perf_counter", perf_counter)
    return line


def test_the_clocks_meet_where_the_host_sees_the_gpu_pass_the_anchor_not_where_it_recorded_it(shared_gpu):
    """The loaded H200: a neighbour's time slice holds the anchor's event 0.4 ms; a lead timed from the record read
    every call that much low. The host then misses its first sighting by 0.3 ms; the next event's meeting is kept."""
    import torch

    held = {"first": True}

    def runs_at(recorded_s: float) -> float:
        if held.pop("first", False):
            shared_gpu["late"][round((recorded_s + 400e-6) * 1e6) + 1] = 300e-6  # seen 0.3 ms late
            return recorded_s + 400e-6  # the neighbour's slice
        return recorded_s + 5e-6

    shared_gpu["runs_at"] = runs_at
    clock = host_lead.LeadClock()
    anchored = shared_gpu["now"]
    clock.anchor_now()
    _, first, host_s = clock.anchor
    assert host_s == pytest.approx(first.runs_s, abs=3e-6)  # within a poll of the GPU passing it
    assert host_s - anchored > 350e-6  # not the host's clock at the record: the event waited 0.4 ms
    # a call 1 ms later, behind 2.5 ms of GPU work queued since the anchor
    shared_gpu["runs_at"] = lambda recorded_s: first.runs_s + 3.5e-3
    call_s = host_s + 1e-3
    shared_gpu["now"] = call_s - 1e-6
    entry = _entry()
    clock.sample(entry, torch.device("cuda", 0))
    clock.collect(wait=False)
    assert entry.stats.lead_us == []  # not passed yet
    shared_gpu["now"] = first.runs_s + 4e-3
    clock.collect()
    assert entry.stats.lead_us == [pytest.approx(2_500.0, abs=5.0)]


def test_an_anchor_the_gpu_does_not_reach_soon_reads_no_lead(shared_gpu):
    import torch

    shared_gpu["runs_at"] = lambda recorded_s: recorded_s + 1.0  # another process holds the GPU for a second
    clock = host_lead.LeadClock()
    entry = _entry()
    started = shared_gpu["now"]
    clock.anchor_now([entry])
    assert clock.anchor is None and shared_gpu["now"] - started < host_lead.ANCHOR_WAIT_S + 1e-3
    assert clock.sample(entry, torch.device("cuda", 0)) is None and not clock.pending and not entry.leads_due


def test_leads_are_read_only_soon_after_an_anchor_on_its_device_and_a_few_per_signature(fake_gpu):
    import torch

    clock = host_lead.LeadClock()
    entry = _entry()
    clock.sample(entry, torch.device("cuda", 0))
    assert not clock.pending  # no anchor yet: the clocks have not met
    FakeEvent.gpu_ms_at_record = [1.0] * 40
    _anchor(clock)
    clock.sample(entry, torch.device("cuda", 1))
    assert not clock.pending  # another device than the anchor's
    for _ in range(host_lead.PER_SIGNATURE + 3):
        clock.sample(entry, torch.device("cuda", 0))
    assert len(clock.pending) == host_lead.PER_SIGNATURE
    other = _entry(1)
    fake_gpu["s"] += host_lead.FRESH_S + 0.1
    clock.sample(other, torch.device("cuda", 0))
    assert len(clock.pending) == host_lead.PER_SIGNATURE  # the anchor has grown stale: its clocks drift apart


def test_no_event_is_recorded_while_the_stream_is_captured_into_a_cuda_graph(fake_gpu, monkeypatch):
    import torch

    clock = host_lead.LeadClock()
    FakeEvent.gpu_ms_at_record = [1.0]
    _anchor(clock)
    monkeypatch.setattr(host_lead.torch.cuda, "is_current_stream_capturing", lambda: True)
    clock.sample(_entry(), torch.device("cuda", 0))
    assert not clock.pending


def _measured(gpu=800.0, call_gpu=1_950.0, host=1_800.0, call_host=450.0, host_fwd=700.0, call_host_fwd=150.0):
    """A packed training code beside its call (µs a call), 8 calls on one mask."""
    def s(x):
        return Summary(x, x * 1.01, 15, x * 0.99)
    alternative = Alternative("varlen", "VARLEN_ATTN", gpu, gpu, 1_800.0, 1e-3, 50.0, "out = ...", leaves_sdpa=True,
                              calls_per_batch=8)
    return Measured(alternative, s(1_800.0), s(gpu), Beside(s(host), s(call_host), s(call_gpu), s(2_000.0),
                                                            s(host_fwd), s(call_host_fwd)))


def _lead(fwd, bwd):
    return HostLead(Summary(fwd, fwd, 20, fwd), None if bwd is None else Summary(bwd, bwd, 20, bwd))


def test_packed_code_is_held_to_gpu_per_call_against_the_call_beside_it_where_the_hosts_lead_covers_what_it_adds():
    # forward: (700 - 150) x 8 = 4,400 µs added; backward: ((1,800 - 700) - (450 - 150)) x 8 = 6,400 µs added
    m = _measured()
    ours, theirs, clock, why = host_room(m, _lead(5_000.0, 7_000.0))
    assert (clock, ours.median, theirs.median) == ("gpu", 800.0, 1_950.0)
    assert "covers" in why and "4,400" in why and "6,400" in why
    ours, theirs, clock, why = host_room(m, _lead(5_000.0, 6_000.0))  # the backward's lead falls short
    assert (clock, ours.median, theirs.median) == ("host", 1_800.0, 450.0)
    assert "does not cover" in why


def test_no_decision_where_a_phase_the_code_slows_has_no_lead_read():
    assert host_room(_measured(), _lead(5_000.0, None)) is None
    # a code that adds no host time to the backward needs no backward lead
    m = _measured(host=700.0 + 300.0, call_host=450.0)
    assert host_room(m, _lead(5_000.0, None))[2] == "gpu"


def test_the_report_says_the_hosts_lead_and_when_the_gpu_waited():
    row = CallRow(SIG, 32, "a.py:1", None, "CUDNN_ATTENTION", "", {}, None, None, (), (1,),
                  backward=BackwardRow("CUDNN_ATTENTION", None, (), Summary.of([1.5, 1.6, 2.0])),
                  lead_us=Summary.of([100.0, 2_000.0, 4_000.0]))
    text = host_lead_text(row)
    assert text.startswith("forward 2.00 ms") and "backward (profiled) 1.6 µs" in text
    assert "the GPU waited for the host" in text
    assert row.host_lead == HostLead(row.lead_us, row.backward.lead_us)
    assert host_lead_text(CallRow(SIG, 1, "a.py:1", None, None, "", {}, None, None, (), (1,))) == ""


def test_leads_and_the_call_beside_the_code_survive_the_wire():
    stats = CallStats(SIG, lead_us=[1.0, 2.0], backward=BackwardStats("CUDNN_ATTENTION", [3.0], ["k"], [4.0]))
    again = CallStats.from_dict(stats.to_dict())
    assert again.lead_us == [1.0, 2.0] and again.backward.lead_us == [4.0]
    cost = PackedCost((1.0,), (2.0,), 3.0, 1e-3, 5.0, 0.1, host_us=(6.0,), host_forward_us=(7.0,),
                      call=CallClocks((8.0,), (9.0,), (10.0,), (11.0,)))
    assert PackedCost.from_dict(cost.to_dict()) == cost


def test_no_anchor_is_recorded_while_the_stream_is_captured_into_a_cuda_graph(fake_gpu, monkeypatch):
    """A window's stop inside a program's capture: an event recorded there would be a node of the program's graph."""
    clock = host_lead.LeadClock()
    monkeypatch.setattr(host_lead.torch.cuda, "is_current_stream_capturing", lambda: True)
    FakeEvent.gpu_ms_at_record = [0.0] * host_lead.ANCHOR_EVENTS
    FakeEvent.gpu_idle = True
    try:
        clock.anchor_now([_entry()])
    finally:
        FakeEvent.gpu_idle = False
    assert clock.anchor is None
    assert len(FakeEvent.gpu_ms_at_record) == host_lead.ANCHOR_EVENTS, "no event recorded"


def test_an_event_that_cannot_be_recorded_leaves_the_call_alone(fake_gpu, monkeypatch):
    import torch

    clock = host_lead.LeadClock()
    _anchor(clock)

    class Broken(FakeEvent):
        def record(self) -> None:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(host_lead.torch.cuda, "Event", Broken)
    clock.sample(_entry(), torch.device("cuda", 0))  # no exception reaches the program's SDPA call
    assert not clock.pending


def _calls_on(clock, entry, mask, leads_ms, fake_gpu, grad=False):
    """One batch's calls on ``mask``: each call 1 ms after the last on the host, its event run ``lead`` later on
    the fake GPU; with ``grad``, each call's output needs a gradient and the outputs are returned."""
    import torch

    outs = []
    for lead in leads_ms:
        fake_gpu["s"] += 0.001
        FakeEvent.gpu_ms_at_record.append((fake_gpu["s"] - 100.0) * 1e3 + lead)
        read = clock.sample(entry, torch.device("cuda", 0), mask[:, :, :4])  # a view, as transformers passes
        if FakeEvent.gpu_ms_at_record:  # not recorded: the call was not read
            FakeEvent.gpu_ms_at_record.pop()
        if grad:
            out = torch.ones(2, requires_grad=True) * 2.0
            clock.follow_backward(read, out)
            outs.append(out)
    return outs


def test_a_batch_is_read_whole_after_the_one_the_anchor_found_with_each_backward_at_its_calls_position(fake_gpu):
    import torch

    clock = host_lead.LeadClock()
    entry = _entry()
    FakeEvent.gpu_ms_at_record = []
    _anchor(clock, [entry])  # host 100 s, GPU 0 ms
    assert entry.leads_due  # its calls take the slow path until its batches are read
    skipped, read, after = (torch.zeros(8, 1, 8, 8, dtype=torch.bool) for _ in range(3))
    _calls_on(clock, entry, skipped, [5.0, 5.0], fake_gpu)  # the first batch after the anchor: not read
    assert not clock.pending
    outs = _calls_on(clock, entry, read, [1.0, 2.0, 3.0], fake_gpu, grad=True)
    assert len(clock.pending) == 3
    # its backward, last layer first: the hooks record an event each, 7, 8 and 9 ms ahead
    FakeEvent.gpu_ms_at_record += [(fake_gpu["s"] + 0.001 * i - 100.0) * 1e3 + lead
                                   for i, lead in enumerate([7.0, 8.0, 9.0])]
    times = iter(fake_gpu["s"] + 0.001 * i for i in range(3))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(host_lead.time, "perf_counter", lambda: next(times))
        sum(o.sum() for o in reversed(outs)).backward()
    _calls_on(clock, entry, after, [4.0], fake_gpu)  # the next batch closes it
    for item in clock.pending:
        item[4].passed = True
    clock.collect()
    (batch,) = entry.stats.lead_batches
    assert batch.forward == pytest.approx((1_000.0, 2_000.0, 3_000.0))
    assert batch.backward == pytest.approx((9_000.0, 8_000.0, 7_000.0))  # by forward position: position 2 ran first
    assert entry.stats.lead_us[:3] == pytest.approx([1_000.0, 2_000.0, 3_000.0])


def test_reading_stops_after_its_batches_when_the_anchor_grows_stale_and_during_a_window(fake_gpu):
    import torch

    clock = host_lead.LeadClock()
    entry = _entry()
    FakeEvent.gpu_ms_at_record = []
    _anchor(clock, [entry])
    for _ in range(host_lead.SKIP_BATCHES + host_lead.BATCHES):
        _calls_on(clock, entry, torch.zeros(1, 1, 4, 4, dtype=torch.bool), [1.0, 1.0], fake_gpu)
    assert entry.leads_due
    _calls_on(clock, entry, torch.zeros(1, 1, 4, 4, dtype=torch.bool), [1.0], fake_gpu)
    assert not entry.leads_due  # its batches are read: its calls go back to the fast path
    for item in clock.pending:
        item[4].passed = True
    clock.collect()
    assert len(entry.stats.lead_batches) == host_lead.BATCHES
    FakeEvent.gpu_ms_at_record = []
    _anchor(clock, [entry])
    clock.pause()  # a window starts
    mask = torch.zeros(1, 1, 4, 4, dtype=torch.bool)
    assert clock.sample(entry, torch.device("cuda", 0), mask) is None and not entry.leads_due
    FakeEvent.gpu_ms_at_record = []
    _anchor(clock, [entry])
    fake_gpu["s"] += host_lead.FRESH_S + 0.1
    assert clock.sample(entry, torch.device("cuda", 0), mask) is None and not entry.leads_due


def test_lead_batches_survive_the_wire_and_merge_into_the_rows_typical_batch():
    from sdpa_tui.core.calls.host_pace import BatchLeads

    stats = CallStats(SIG, lead_batches=[BatchLeads((1.0, 2.0), (3.0, 4.0)), BatchLeads((3.0, None), ())])
    assert CallStats.from_dict(stats.to_dict()).lead_batches == stats.lead_batches


def test_with_a_batch_read_whole_packed_code_is_held_to_its_gpu_per_call_plus_the_gpus_wait_for_the_host():
    from sdpa_tui.core.calls.host_pace import TypicalBatch

    m = _measured()  # forward +550 µs of host a call, backward +800; GPU 1,150 µs a call saved, 1/3 in the forward
    far = HostLead(None, None, TypicalBatch((50_000.0,) * 8, (50_000.0,) * 8, 3), 1 / 3)
    ours, theirs, clock, why = host_room(m, far)
    assert (clock, ours.median, theirs.median) == ("paced", 800.0, 1_950.0)  # no wait: the GPU's saving whole
    assert "8 calls of a batch" in why and "3 batch(es)" in why and "waits 0.0 µs a batch" in why
    close = HostLead(None, None, TypicalBatch((0.0,) * 8, (0.0,) * 8, 3), 1 / 3)
    ours, theirs, clock, why = host_room(m, close)
    # host-bound: every µs the code adds is waited for, and the GPU's saving is lost: 550 + 800 more a call
    assert clock == "paced" and ours.median - theirs.median == pytest.approx(550.0 + 800.0)
    inference = HostLead(None, None, TypicalBatch((50_000.0,) * 8, (), 3), None)
    assert host_room(m, inference) is None  # a training call with no backward read and no medians: undecided


def test_the_report_shows_a_batchs_leads_first_call_to_last():
    from sdpa_tui.core.calls.host_pace import BatchLeads

    row = CallRow(SIG, 32, "a.py:1", None, "CUDNN_ATTENTION", "", {}, None, None, (), (1,),
                  lead_us=Summary.of([1.0, 500.0]),
                  lead_batches=(BatchLeads((1.0, 500.0), (9_000.0, 3_000.0)),))
    text = host_lead_text(row)
    assert text.startswith("forward 1.0 µs → 500.0 µs, backward 3.00 ms → 9.00 ms ahead of the GPU over the 2 calls")
    assert "under 10 µs at 1 of 4" in text
