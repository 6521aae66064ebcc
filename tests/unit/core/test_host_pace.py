"""What code that trades GPU time for host time saves a program, replayed on the host's lead at each call of a batch
(``core/calls/host_pace.py``)."""

from __future__ import annotations

import pytest

from sdpa_tui.core.calls.host_pace import (
    BatchLeads,
    PhaseChange,
    TypicalBatch,
    gpu_wait_us,
    paced_saving_us,
    typical_batch,
)

CODE = PhaseChange(host_added_us=300.0, gpu_saved_us=200.0)  # per call: 300 µs more host, 200 µs less GPU


def test_a_host_far_ahead_keeps_the_gpus_saving():
    batch = TypicalBatch(forward=(50_000.0,) * 8, backward=(), batches=3)
    assert gpu_wait_us(batch, CODE) == 0.0
    assert paced_saving_us(batch, CODE) == pytest.approx(8 * 200.0)


def test_a_host_bound_program_pays_the_codes_host_time_in_full():
    batch = TypicalBatch(forward=(0.0,) * 8, backward=(), batches=3)
    # each call's lead falls by 500 µs a call before it; the batch's end as far behind as its last call
    assert gpu_wait_us(batch, CODE) == pytest.approx(8 * 500.0)
    assert paced_saving_us(batch, CODE) == pytest.approx(-8 * 300.0)


def test_a_lead_that_grows_over_the_batch_covers_the_later_calls_only():
    batch = TypicalBatch(forward=(0.0, 1_000.0, 2_000.0, 4_000.0), backward=(), batches=1)
    # call k's lead less k x 500: 0, 500, 1,000, 2,500; the end: 4,000 - 2,000: never below zero
    assert gpu_wait_us(batch, CODE) == 0.0
    slow = PhaseChange(host_added_us=1_300.0, gpu_saved_us=200.0)  # 1,500 µs a call: the GPU waits at call 3
    assert gpu_wait_us(batch, slow) == pytest.approx(max(1_500.0 - 1_000.0, 3_000.0 - 2_000.0, 4_500.0 - 3_000.0,
                                                         6_000.0 - 4_000.0))


def test_the_backward_runs_after_the_whole_forward_last_layer_first():
    batch = TypicalBatch(forward=(10_000.0, 10_000.0), backward=(100.0, 9_000.0), batches=1)
    back = PhaseChange(host_added_us=1_000.0, gpu_saved_us=0.0)
    # the backward of position 1 runs first: 2 x 500 forward shift against 9,000; position 0's then 2,000 against
    # 100; the batch's end, as far ahead as that last call, after both backwards: 3,000 against 100
    assert gpu_wait_us(batch, CODE, back) == pytest.approx(2 * 500.0 + 2 * 1_000.0 - 100.0)
    assert gpu_wait_us(batch, CODE) == 0.0  # the forward alone: its leads cover it


def test_the_typical_batch_is_the_median_at_each_position_of_the_batches_read_whole():
    batches = [BatchLeads((1.0, 2.0, 3.0), (4.0, 5.0, 6.0)), BatchLeads((3.0, 4.0, 5.0), (6.0, 7.0, 8.0)),
               BatchLeads((2.0, None, 4.0), (5.0, 6.0, 7.0)),  # a call not read: left out
               BatchLeads((9.0, 9.0), ())]  # another length
    typical = typical_batch(batches)
    assert typical == TypicalBatch((2.0, 3.0, 4.0), (5.0, 6.0, 7.0), 2)
    assert typical_batch([BatchLeads((1.0, 2.0), ())]) == TypicalBatch((1.0, 2.0), (), 1)  # inference: no backward
    assert typical_batch([]) is None
    assert typical_batch([BatchLeads((None, 1.0), ())]) is None
