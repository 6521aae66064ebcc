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

    def __init__(self, enable_timing: bool = False) -> None:
        self.gpu_ms = None
        self.passed = False

    def record(self) -> None:
        self.gpu_ms = FakeEvent.gpu_ms_at_record.pop(0)

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


def test_a_calls_lead_is_its_events_gpu_time_against_the_anchor_less_the_hosts_time_at_the_call(fake_gpu):
    import torch

    clock = host_lead.LeadClock()
    FakeEvent.gpu_ms_at_record = [5_000.0, 5_003.5]  # the anchor at GPU 5,000 ms; the call's event 3.5 ms later
    clock.anchor_now()  # host 100.000 s: the GPU idle, so it meets the host's clock here
    fake_gpu["s"] = 100.001  # the call is made 1 ms later on the host: the GPU gets to it 2.5 ms after that
    entry = _entry()
    clock.sample(entry, torch.device("cuda", 0))
    clock.collect()
    assert entry.stats.lead_us == []  # the GPU has not passed the event yet: nothing read
    clock.pending[0][1].passed = True
    clock.collect()
    assert entry.stats.lead_us == [pytest.approx(2_500.0)]
    assert clock.pending == []


def test_leads_are_read_only_soon_after_an_anchor_on_its_device_and_a_few_per_signature(fake_gpu):
    import torch

    clock = host_lead.LeadClock()
    entry = _entry()
    clock.sample(entry, torch.device("cuda", 0))
    assert clock.pending == []  # no anchor yet: the clocks have not met
    FakeEvent.gpu_ms_at_record = [0.0] + [1.0] * 40
    clock.anchor_now()
    clock.sample(entry, torch.device("cuda", 1))
    assert clock.pending == []  # another device than the anchor's
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
    FakeEvent.gpu_ms_at_record = [0.0, 1.0]
    clock.anchor_now()
    monkeypatch.setattr(host_lead.torch.cuda, "is_current_stream_capturing", lambda: True)
    clock.sample(_entry(), torch.device("cuda", 0))
    assert clock.pending == []


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


def test_an_event_that_cannot_be_recorded_leaves_the_call_alone(fake_gpu, monkeypatch):
    import torch

    clock = host_lead.LeadClock()
    FakeEvent.gpu_ms_at_record = [0.0]
    clock.anchor_now()

    class Broken(FakeEvent):
        def record(self) -> None:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(host_lead.torch.cuda, "Event", Broken)
    clock.sample(_entry(), torch.device("cuda", 0))  # no exception reaches the program's SDPA call
    assert clock.pending == []
