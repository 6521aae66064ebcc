"""The session: what the engine's records add up to, and the comparison table computed from it."""

from __future__ import annotations

import statistics

import pytest
from support.real_data import fixture_kernels

from sdpa_tui.core.backends import ALL_BACKENDS, Backend
from sdpa_tui.core.lab.report_model import ReportModel
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.records import (
    BackendStatus,
    Dispatch,
    EngineError,
    Environment,
    KernelCapture,
    Log,
    Ready,
    Sample,
)
from sdpa_tui.core.traces.kernel_names import main_kernel
from sdpa_tui.core.workload import Workload

FLASH_KERNELS = fixture_kernels("FLASH_ATTENTION.json")
CUDNN_KERNELS = fixture_kernels("CUDNN_ATTENTION.json")

# Timings below are made-up test inputs (plausible for an H200), not measurements.
GPU_US = {
    Backend.CUDNN: [9.7, 9.9, 9.6, 10.4],
    Backend.FLASH: [14.3, 14.1, 14.8, 14.2, 15.0],
    Backend.EFFICIENT: [23.2, 23.5, 22.9],
    Backend.MATH: [114.0, 116.5, 113.2, 120.1, 115.7, 114.9],
}
EAGER_US = {b: [v * 4.0 + 20.0 for v in values] for b, values in GPU_US.items()}


def configured(workload: Workload | None = None, enabled=ALL_BACKENDS) -> Session:
    session = Session(workload or Workload(), enabled)
    session.next_config_id()
    return session


def feed_samples(session: Session, backend: Backend, gpu: list[float | None], eager: list[float], t0: float = 1000.0):
    for i, (g, e) in enumerate(zip(gpu, eager)):
        assert session.apply(Sample(session.config_id, backend, g, e, "graph" if g else "none", 8, t0 + i))


def test_new_session_waits_for_every_enabled_backend():
    session = Session(Workload(), (Backend.FLASH, Backend.MATH))
    assert session.enabled == (Backend.FLASH, Backend.MATH)
    statuses = {b: session.backends[b].status for b in ALL_BACKENDS}
    assert statuses == {Backend.CUDNN: "disabled", Backend.FLASH: "waiting",
                        Backend.EFFICIENT: "disabled", Backend.MATH: "waiting"}


def test_stale_config_records_are_ignored():
    session = configured()
    stale = session.config_id
    fresh = session.next_config_id()
    assert fresh != stale
    records = [
        BackendStatus(stale, Backend.FLASH, "error", "old"),
        Sample(stale, Backend.FLASH, 14.0, 60.0),
        KernelCapture(stale, Backend.FLASH, FLASH_KERNELS, (12.6,)),
        Dispatch(stale, Backend.FLASH),
    ]
    for record in records:
        assert session.apply(record) is False
    state = session.backends[Backend.FLASH]
    assert state.status == "waiting"
    assert len(state.gpu) == len(state.eager) == len(state.kernel) == 0
    assert state.kernels == () and not state.history
    assert session.dispatch is None
    # the same records with the current id do count
    assert session.apply(Sample(fresh, Backend.FLASH, 14.0, 60.0))
    assert len(session.backends[Backend.FLASH].gpu) == 1


def test_disabled_backend_records_are_ignored():
    session = configured(enabled=(Backend.FLASH, Backend.MATH))
    cid = session.config_id
    for record in (
        Sample(cid, Backend.CUDNN, 9.7, 52.0),
        KernelCapture(cid, Backend.CUDNN, CUDNN_KERNELS, (8.4,)),
    ):
        assert session.apply(record) is False
    # Its eligibility is still worth knowing ("flag off, but it could run"): kept apart from its status.
    assert session.apply(BackendStatus(cid, Backend.CUDNN, "ok", measured=False)) is True
    state = session.backends[Backend.CUDNN]
    assert state.status == "disabled" and state.eligibility == "ok"
    assert state.kernels == () and len(state.gpu) == 0 and not state.history
    row = next(r for r in session.rows() if r.backend is Backend.CUDNN)
    assert row.status == "disabled" and not row.enabled and row.gpu_us is None


def test_status_records_set_status_reason_and_details():
    session = configured()
    details = ("Flash attention kernel not used because:", "Flash attention only supports fp16 and bf16")
    assert session.apply(BackendStatus(session.config_id, Backend.FLASH, "not_eligible", details[1], details))
    state = session.backends[Backend.FLASH]
    assert (state.status, state.reason, state.details) == ("not_eligible", details[1], details)


def test_samples_update_medians_and_history():
    session = configured()
    gpu, eager = GPU_US[Backend.FLASH], EAGER_US[Backend.FLASH]
    assert session.apply(BackendStatus(session.config_id, Backend.FLASH, "ok"))
    feed_samples(session, Backend.FLASH, gpu, eager)
    state = session.backends[Backend.FLASH]
    assert state.status == "ok"
    assert state.gpu.summary().median == pytest.approx(statistics.median(gpu))
    assert state.eager.summary().median == pytest.approx(statistics.median(eager))
    assert state.gpu.summary().count == len(gpu)
    assert min(gpu) <= state.gpu.summary().p90 <= max(gpu)
    history = list(state.history)
    assert [h.gpu_us for h in history] == gpu
    assert [h.eager_us for h in history] == eager
    assert all(h.backend is Backend.FLASH and h.config_id == session.config_id for h in history)
    assert all(h.workload == session.workload.describe() for h in history)
    assert state.sparkline_values(session.workload.describe()) == gpu
    assert state.sparkline_values("[1, 1, 1, 1] fp16") == []  # another workload's samples are not drawn
    assert [h.time for h in session.history()] == sorted(h.time for h in history)


def test_a_sample_after_a_kernel_capture_records_the_kernel_median_in_history():
    session = configured()
    cid = session.config_id
    kernel_us = (12.6, 12.5, 12.9)
    session.apply(KernelCapture(cid, Backend.FLASH, FLASH_KERNELS, kernel_us))
    feed_samples(session, Backend.FLASH, [14.3], [60.0])
    assert session.backends[Backend.FLASH].history[-1].kernel_us == pytest.approx(statistics.median(kernel_us))


def test_a_failed_capture_is_kept_to_show_with_the_last_kernels_until_one_succeeds():
    session = configured()
    cid = session.config_id
    session.apply(KernelCapture(cid, Backend.FLASH, FLASH_KERNELS, (12.6,)))
    why = "the profiler process was killed by SIGKILL"
    assert session.apply(KernelCapture(cid, Backend.FLASH, (), (), error=why))
    state = session.backends[Backend.FLASH]
    assert state.capture_error == why and state.kernels == FLASH_KERNELS
    assert state.kernel.values() == [12.6]
    session.apply(KernelCapture(cid, Backend.FLASH, FLASH_KERNELS, (12.7,)))
    assert state.capture_error == ""


def test_kernel_capture_sets_kernels_main_kernel_and_kernel_window():
    session = configured()
    cid = session.config_id
    first, second = (12.6, 12.4, 12.9), (12.7, 13.1)
    assert session.apply(KernelCapture(cid, Backend.FLASH, FLASH_KERNELS, first, 33_554_432))
    assert session.apply(KernelCapture(cid, Backend.FLASH, FLASH_KERNELS, second, None))
    state = session.backends[Backend.FLASH]
    assert state.kernels == FLASH_KERNELS
    assert state.kernel_count == len(FLASH_KERNELS)
    assert state.main_kernel == main_kernel(FLASH_KERNELS)
    assert state.main_kernel.category == "kernel"
    # the kernel window accumulates every call of every burst
    assert state.kernel.values() == [*first, *second]
    assert state.kernel.summary().median == pytest.approx(statistics.median([*first, *second]))
    assert state.peak_bytes == 33_554_432  # a capture without a peak keeps the last one


def test_cudnn_main_kernel_is_not_the_memset():
    session = configured()
    session.apply(KernelCapture(session.config_id, Backend.CUDNN, CUDNN_KERNELS, (8.4,)))
    main = session.backends[Backend.CUDNN].main_kernel
    assert any(k.category == "gpu_memset" for k in CUDNN_KERNELS)
    assert main.category == "kernel"
    assert main.duration_us == max(k.duration_us for k in CUDNN_KERNELS if k.category == "kernel")


def test_set_workload_resets_measurements_but_keeps_history():
    session = configured(enabled=(Backend.FLASH, Backend.MATH))
    cid = session.config_id
    session.apply(BackendStatus(cid, Backend.FLASH, "ok"))
    session.apply(KernelCapture(cid, Backend.FLASH, FLASH_KERNELS, (12.6,), 1 << 20))
    feed_samples(session, Backend.FLASH, GPU_US[Backend.FLASH], EAGER_US[Backend.FLASH])
    session.apply(Dispatch(cid, Backend.FLASH))
    before = session.history()
    old_description = session.workload.describe()

    new = Workload(seq=1024, kv_seq=1024)
    session.set_workload(new)
    assert session.workload == new
    state = session.backends[Backend.FLASH]
    assert state.status == "waiting" and state.reason == ""
    assert len(state.gpu) == len(state.eager) == len(state.kernel) == 0
    assert state.kernels == () and state.main_kernel is None and state.peak_bytes is None
    assert session.dispatch is None
    assert session.backends[Backend.CUDNN].status == "disabled"  # flags are kept
    assert session.enabled == (Backend.FLASH, Backend.MATH)
    assert session.history() == before and len(before) == len(GPU_US[Backend.FLASH])
    assert all(h.workload == old_description for h in before)

    # new samples land in the same history, described by the new workload
    session.next_config_id()
    feed_samples(session, Backend.FLASH, [30.0], [90.0], t0=5000.0)
    assert len(session.history()) == len(before) + 1
    assert session.history()[-1].workload == new.describe()


def test_set_workload_to_the_same_workload_keeps_measurements():
    session = configured()
    feed_samples(session, Backend.MATH, [100.0], [300.0])
    session.set_workload(Workload())
    assert len(session.backends[Backend.MATH].gpu) == 1


def test_enabling_again_brings_a_backend_back_to_waiting():
    session = configured(enabled=(Backend.MATH,))
    assert session.backends[Backend.FLASH].status == "disabled"
    session.set_enabled((Backend.FLASH, Backend.MATH))
    assert session.backends[Backend.FLASH].status == "waiting"
    assert session.enabled == (Backend.FLASH, Backend.MATH)


def fill(session: Session, gpu: dict, eager: dict) -> None:
    cid = session.config_id
    for backend in ALL_BACKENDS:
        session.apply(BackendStatus(cid, backend, "ok"))
        feed_samples(session, backend, gpu[backend], eager[backend])


def test_rows_speedup_and_tflops_from_gpu_medians():
    workload = Workload()
    session = configured(workload)
    fill(session, GPU_US, EAGER_US)
    rows = {r.backend: r for r in session.rows()}
    assert [r.backend for r in session.rows()] == list(ALL_BACKENDS)
    math_median = statistics.median(GPU_US[Backend.MATH])
    for backend, row in rows.items():
        median = statistics.median(GPU_US[backend])
        assert row.gpu_us.median == pytest.approx(median)
        assert row.eager_us.median == pytest.approx(statistics.median(EAGER_US[backend]))
        assert row.speedup_vs_math == pytest.approx(math_median / median)
        assert row.tflops == pytest.approx(workload.flops / (median * 1e-6) / 1e12)
    assert rows[Backend.MATH].speedup_vs_math == pytest.approx(1.0)
    assert rows[Backend.CUDNN].speedup_vs_math > rows[Backend.EFFICIENT].speedup_vs_math > 1.0


def test_rows_on_the_cpu_use_eager_medians():
    workload = Workload(batch=1, heads=2, kv_heads=2, seq=64, kv_seq=64, head_dim=32, dtype="fp32")
    session = configured(workload)
    cid = session.config_id
    session.apply(Ready(Environment(device="cpu", device_name="test CPU", torch_version="2.13.0+cpu")))
    eager = {Backend.FLASH: [80.0, 85.0, 79.0], Backend.MATH: [240.0, 250.0, 260.0, 255.0]}  # test inputs
    for backend in (Backend.FLASH, Backend.MATH):
        session.apply(BackendStatus(cid, backend, "ok"))
        feed_samples(session, backend, [None] * len(eager[backend]), eager[backend])
    for backend in (Backend.CUDNN, Backend.EFFICIENT):
        assert session.apply(BackendStatus(cid, backend, "not_eligible", "no CPU implementation"))
    rows = {r.backend: r for r in session.rows()}
    for backend in (Backend.CUDNN, Backend.EFFICIENT):
        assert rows[backend].status == "not_eligible" and rows[backend].tflops is None
    for backend in (Backend.FLASH, Backend.MATH):
        assert rows[backend].gpu_us is None
        median = statistics.median(eager[backend])
        assert rows[backend].eager_us.median == pytest.approx(median)
        assert rows[backend].tflops == pytest.approx(workload.flops / (median * 1e-6) / 1e12)
    assert rows[Backend.FLASH].speedup_vs_math == pytest.approx(
        statistics.median(eager[Backend.MATH]) / statistics.median(eager[Backend.FLASH])
    )
    assert session.backends[Backend.FLASH].sparkline_values(session.workload.describe()) == eager[Backend.FLASH]


def test_eager_samples_beside_the_profiler_start_stand_in_until_one_taken_apart_from_it():
    """The profiler process's start (``import torch`` beside the slice) slows eager slices: they are the first
    numbers on screen, then leave the median at the first sample taken apart from it; later ones (a new profiler
    process after a pause) do not enter a window that has better ones. Every sample stays in the history, named."""
    session = configured()
    cid = session.config_id
    session.apply(BackendStatus(cid, Backend.MATH, "ok"))
    state = session.backends[Backend.MATH]

    def sample(eager_us: float, starting: bool, t: float) -> None:
        assert session.apply(Sample(cid, Backend.MATH, None, eager_us, "none", 1, t, profiler_starting=starting))

    sample(400.0, True, 1.0)
    sample(420.0, True, 2.0)
    assert state.eager.values() == [400.0, 420.0] and state.eager_settled == 0  # shown while nothing better
    sample(250.0, False, 3.0)
    sample(260.0, False, 4.0)
    assert state.eager.values() == [250.0, 260.0] and state.eager_settled == 2
    sample(900.0, True, 5.0)  # a profiler process starting again later
    assert state.eager.summary().median == pytest.approx(255.0)
    assert [h.eager_us for h in state.history] == [400.0, 420.0, 250.0, 260.0, 900.0]
    assert [h.conditions for h in state.history] == ["profiler-starting"] * 2 + [""] * 2 + ["profiler-starting"]
    # a profiler start longer than the window holds: its last values shown, every one provisional
    fresh = configured()
    fresh.apply(BackendStatus(fresh.config_id, Backend.MATH, "ok"))
    slow = fresh.backends[Backend.MATH]
    for i in range(60):
        assert fresh.apply(Sample(fresh.config_id, Backend.MATH, None, 400.0 + i, "none", 1, float(i),
                                  profiler_starting=True))
    assert len(slow.eager) == slow.eager_provisional == 50 and slow.eager_settled == 0
    assert slow.eager.values()[-1] == 459.0
    session.set_workload(Workload(seq=256))  # a new workload starts clean
    assert len(state.eager) == 0 and state.eager_provisional == 0


def test_rows_without_math_or_not_ok_have_no_speedup():
    session = configured()
    cid = session.config_id
    feed_samples(session, Backend.FLASH, [14.0], [60.0])
    session.apply(BackendStatus(cid, Backend.MATH, "oom", "out of memory: needed 9.70 GiB more"))
    session.apply(BackendStatus(cid, Backend.CUDNN, "not_eligible", "test reason"))
    rows = {r.backend: r for r in session.rows()}
    assert rows[Backend.FLASH].speedup_vs_math is None
    assert rows[Backend.FLASH].tflops is not None
    assert rows[Backend.MATH].speedup_vs_math is None and rows[Backend.MATH].tflops is None
    assert rows[Backend.MATH].reason.startswith("out of memory")
    assert rows[Backend.CUDNN].tflops is None and rows[Backend.CUDNN].main_kernel is None


def test_rows_carry_kernel_identity_and_peak():
    session = configured()
    cid = session.config_id
    session.apply(KernelCapture(cid, Backend.FLASH, FLASH_KERNELS, (12.6, 12.7), 3 * 2**20))
    row = next(r for r in session.rows() if r.backend is Backend.FLASH)
    assert row.main_kernel_full == main_kernel(FLASH_KERNELS).name
    assert row.main_kernel and len(row.main_kernel) <= len(row.main_kernel_full)
    assert row.kernels_per_call == len(FLASH_KERNELS)
    assert row.peak_mib == pytest.approx(3.0)
    assert row.kernel_us.median == pytest.approx(statistics.median((12.6, 12.7)))


def test_ready_log_error_and_dispatch():
    session = configured()
    env = Environment(device="cuda:0", device_name="NVIDIA H200", torch_version="2.11.0", sm="9.0")
    assert session.apply(Ready(env)) and session.environment == env
    assert session.apply(Log("a torch warning line")) is False
    assert list(session.logs) == ["a torch warning line"]
    assert session.apply(EngineError("engine restarted"))
    assert list(session.errors) == ["engine restarted"]
    assert session.apply(Dispatch(session.config_id, Backend.CUDNN, env.default_priority_order))
    assert session.dispatch.choice is Backend.CUDNN


def test_switching_a_backend_off_clears_its_numbers_but_keeps_its_history():
    session = configured()
    cid = session.config_id
    session.apply(Sample(cid, Backend.FLASH, 13.3, 62.5))
    session.apply(KernelCapture(cid, Backend.FLASH, FLASH_KERNELS, (12.6,)))
    session.set_enabled((Backend.CUDNN, Backend.EFFICIENT, Backend.MATH))
    row = next(r for r in session.rows() if r.backend is Backend.FLASH)
    assert row.status == "disabled" and row.gpu_us is None and row.kernel_us is None and row.main_kernel is None
    assert len(session.backends[Backend.FLASH].history) == 1


def test_a_share_of_peak_above_100_percent_is_left_out_and_said():
    """A rate above the measured matmul peak means that peak is no ceiling: no share, and a line why."""
    from sdpa_tui.core.protocol.records import PeakFlops
    from sdpa_tui.exports.lab.report_tables import context_lines

    session = configured()
    for backend in ALL_BACKENDS:
        feed_samples(session, backend, GPU_US[backend], EAGER_US[backend])
    flops = session.workload.flops
    flash_tflops = flops / (statistics.median(GPU_US[Backend.FLASH]) * 1e-6) / 1e12
    math_tflops = flops / (statistics.median(GPU_US[Backend.MATH]) * 1e-6) / 1e12
    session.apply(PeakFlops(session.workload.dtype, (flash_tflops + math_tflops) / 2, "a test peak"))
    rows = {r.backend: r for r in session.rows()}
    assert rows[Backend.FLASH].pct_of_peak is None and rows[Backend.CUDNN].pct_of_peak is None
    assert 0 < rows[Backend.MATH].pct_of_peak <= 100
    assert all(r.pct_of_peak is None or r.pct_of_peak <= 100 for r in rows.values())
    said = [line for line in context_lines(ReportModel.of(session)) if "left out" in line]
    assert said and "Flash" in said[0] and "cuDNN" in said[0] and "Math" not in said[0]


def test_a_status_from_the_wire_is_a_status_and_is_written_as_the_same_string():
    import json

    from sdpa_tui.core.protocol.wire_format import decode, encode
    from sdpa_tui.core.status import Status

    session = Session(Workload())
    record = decode(encode(BackendStatus(session.config_id, Backend.MATH, "oom", "needs 9 GiB")))
    session.apply(record)
    state = session.backends[Backend.MATH]
    assert state.status is Status.OOM and state.status == "oom"
    assert json.dumps({"status": state.status}) == '{"status": "oom"}', "files read as before"
