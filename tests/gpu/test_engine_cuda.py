"""The real engine on a CUDA GPU (skipped without one: run on the GPU machine).

The shapes are DESIGN.md's: [2, 8, 512, 64], fp16 (every backend runs) and fp32 (FLASH and
cuDNN cannot). Waits are bounded by generous deadlines; no assertion is about elapsed time.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.paths import REPO

from sdpa_tui.core.backends import ALL_BACKENDS, Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.traces.kernel_names import identify
from sdpa_tui.core.traces.trace import GPU_CATEGORIES
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.host.headless import measure

pytestmark = [pytest.mark.cuda, pytest.mark.torch_range]

DEADLINE_S = 300.0
FP16 = Workload()  # [2, 8, 512, 64] fp16
FP32 = Workload(dtype="fp32")


@pytest.fixture(scope="module")
def fp16_session() -> Session:
    return measure(FP16, ALL_BACKENDS, device="cuda", duration_s=1.0, timeout_s=DEADLINE_S)


@pytest.fixture(scope="module")
def fp32_session() -> Session:
    return measure(FP32, ALL_BACKENDS, device="cuda", duration_s=1.0, timeout_s=DEADLINE_S)


def rows(session: Session):
    return {r.backend: r for r in session.rows()}


def test_environment_is_the_gpu(fp16_session):
    env = fp16_session.environment
    assert env is not None and not env.is_cpu
    assert env.device.startswith("cuda")
    assert env.device_name and env.sm and env.sm_count and env.sm_count > 0
    assert env.cuda_version and env.memory_total_bytes and env.memory_total_bytes > 0
    assert not fp16_session.errors


def test_every_backend_runs_fp16(fp16_session):
    for backend, row in rows(fp16_session).items():
        assert row.status == "ok", (backend, row.status, row.reason)
        assert row.gpu_us is not None and row.eager_us is not None and row.kernel_us is not None
        assert row.gpu_us.median > 0 and row.kernel_us.median > 0
        # graph replay removes the host launch overhead that the eager loop pays
        assert row.gpu_us.median < row.eager_us.median, backend
        assert row.tflops is not None and row.tflops > 0
        assert row.peak_mib is not None and row.peak_mib >= 0
        assert fp16_session.backends[backend].gpu_method in ("graph", "events")


def test_kernel_captures_have_launch_details(fp16_session):
    for backend, row in rows(fp16_session).items():
        assert row.kernels, backend
        assert all(k.category in GPU_CATEGORIES for k in row.kernels), backend
        main = fp16_session.backends[backend].main_kernel
        assert main is not None and main.category == "kernel", backend
        for kernel in (k for k in row.kernels if k.category == "kernel"):
            assert kernel.grid and all(d >= 1 for d in kernel.grid), (backend, kernel.name)
            assert kernel.block and all(d >= 1 for d in kernel.block), (backend, kernel.name)
            assert kernel.registers is not None and kernel.registers > 0, (backend, kernel.name)
            assert kernel.shared_memory is not None, (backend, kernel.name)


def test_fused_backends_run_attention_kernels(fp16_session):
    for backend in (Backend.CUDNN, Backend.FLASH, Backend.EFFICIENT):
        main = fp16_session.backends[backend].main_kernel
        assert identify(main.name).family is not None, (backend, main.name)
    # MATH is made of several kernels (gemms, softmax, ...)
    assert rows(fp16_session)[Backend.MATH].kernels_per_call > 1


def test_cudnn_main_kernel_on_hopper(fp16_session):
    if fp16_session.environment.sm != "9.0":
        pytest.skip(f"the cuDNN kernel name is checked on sm 9.0; this GPU is sm {fp16_session.environment.sm}")
    main = fp16_session.backends[Backend.CUDNN].main_kernel
    assert "cudnn" in main.name.lower()


def test_dispatch_picks_an_enabled_backend(fp16_session):
    assert fp16_session.dispatch is not None
    assert fp16_session.dispatch.choice in ALL_BACKENDS


def test_fp32_makes_flash_and_cudnn_not_eligible(fp32_session):
    by_backend = rows(fp32_session)
    for backend in (Backend.FLASH, Backend.CUDNN):
        row = by_backend[backend]
        assert row.status == "not_eligible", (backend, row.status, row.reason)
        assert row.reason and row.details
        # torch's reason for this backend (the dtype), not another backend's "runtime disabled" line
        assert "dtype" in row.reason.lower() and "runtime disabled" not in row.reason, (backend, row.reason)
        assert row.gpu_us is None and not row.kernels
    for backend in (Backend.EFFICIENT, Backend.MATH):
        row = by_backend[backend]
        assert row.status == "ok", (backend, row.status, row.reason)
        assert row.gpu_us is not None and row.gpu_us.median < row.eager_us.median
    assert fp32_session.dispatch.choice in (Backend.EFFICIENT, Backend.MATH)


def test_fwd_bwd_kernel_capture_includes_the_backward_kernels():
    session = measure(Workload(direction="fwd+bwd"), ALL_BACKENDS, device="cuda", duration_s=1.0,
                      timeout_s=DEADLINE_S)
    by_backend = rows(session)
    for backend in (Backend.CUDNN, Backend.FLASH, Backend.EFFICIENT):
        row = by_backend[backend]
        assert row.status == "ok", (backend, row.reason)
        directions = {identify(k.name).direction for k in row.kernels}
        assert {"forward", "backward"} <= directions, (backend, [k.name for k in row.kernels])
    for row in by_backend.values():
        assert row.gpu_us.median < row.eager_us.median


TORCH_MARKERS = ("Warning", "UserWarning", "profiler", "STAGE:", "Triggered internally", "USDT", ".cpp:", "CUPTI",
                 "[W", "[I")


def test_report_on_the_gpu_keeps_torch_output_off_the_terminal():
    proc = subprocess.run(
        [sys.executable, "-m", "sdpa_tui", "report", "--batch", "1", "--heads", "2", "--seq", "128",
         "--head-dim", "64", "--duration", "0.5"],
        cwd=REPO, capture_output=True, text=True, timeout=DEADLINE_S,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr
    for line in proc.stderr.splitlines():
        assert not any(marker in line for marker in TORCH_MARKERS), f"torch output leaked: {line!r}"
    assert "SDPA backends" in proc.stdout and "cuda" in proc.stdout


def test_math_that_clearly_cannot_fit_is_not_launched_and_the_others_go_on():
    huge = Workload(batch=1, heads=16, kv_heads=16, seq=65536, kv_seq=65536, head_dim=128, dtype="bf16", mask="causal")
    session = measure(huge, (Backend.CUDNN, Backend.MATH), device="cuda", duration_s=0.5, timeout_s=DEADLINE_S)
    math = session.backends[Backend.MATH]
    assert math.status == "oom" and "not launched" in math.reason
    assert session.backends[Backend.CUDNN].status == "ok"


def test_a_custom_priority_changes_the_pick_on_the_gpu():
    session = measure(FP16, ALL_BACKENDS, device="cuda", duration_s=0.3, timeout_s=DEADLINE_S,
                      priority=(Backend.FLASH, Backend.CUDNN))
    assert session.dispatch.priority_order[0] == Backend.FLASH.value
    assert session.dispatch.choice is Backend.FLASH


def test_the_graphs_nodes_name_the_kernels_the_profiler_measures(fp16_session):
    """Kernel identity from the GPU/call clock's CUDA graph (shown before the profiler's first burst) against the
    profiler's capture of the same backend in the profiler process: the same activities, and the same launch
    (grid, block, shared memory) for every kernel."""
    from sdpa_tui.engine.measuring import graph_nodes

    if not graph_nodes.available():
        pytest.skip("cuda-bindings is not installed: kernels are named at the profiler's first burst")
    for backend in ALL_BACKENDS:
        state = fp16_session.backends[backend]
        graph, measured = state.graph_kernels, state.kernels
        assert graph and measured, backend
        assert sorted(k.name for k in graph) == sorted(k.name for k in measured), backend
        launches = {(k.name, k.grid, k.block, k.shared_memory) for k in measured}
        assert {(k.name, k.grid, k.block, k.shared_memory) for k in graph} == launches, backend


def test_the_gpu_call_graph_holds_enough_gpu_work_though_sized_from_a_host_bound_estimate():
    """The graph is sized from the eager clock, which at a small shape is the host's time (about 90 µs a call on an
    H100 for 9 µs of GPU work): it is captured again with more calls, so the graph's own launch gap is not added to
    every few calls; the SM clock is read beside it."""
    import torch
    import torch.nn.functional as F

    from sdpa_tui.engine.measuring import clocks

    device = torch.device("cuda")
    q = torch.randn(2, 8, 512, 64, device=device, dtype=torch.float16)
    clock = clocks.GraphClock(lambda: F.scaled_dot_product_attention(q, q, q), device, per_call_us=100.0)
    try:
        assert clock.method == "graph"
        per_call = clock.sample(10)
        assert clock.calls == clocks.MAX_CALLS_PER_GRAPH or clock.calls * per_call >= clocks.GRAPH_TARGET_US / 2
        assert clock.calls > clocks.calls_for(clocks.GRAPH_TARGET_US, 100.0, clocks.MAX_CALLS_PER_GRAPH)
        mhz = clocks.sm_clock_mhz(device)  # nvidia-ml-py is a dependency: NVML answers on a GPU machine
        assert mhz is not None and 300 <= mhz <= 4_000
    finally:
        clock.release()


def test_the_queued_clock_is_the_gpus_span_over_the_calls_as_cupti_reads_it_and_holds_no_host_time():
    """The queued clock (``clocks.queued_us``: calls launched while the GPU still waits, timed with CUDA events)
    against CUPTI's timestamps of the same calls' kernels, read at the same moment (under torch.profiler, whose host
    overhead the clock's head start absorbs): from the first kernel after the last wait to the last kernel's end,
    within max(5 %, 2 µs) a call, the median of five samples against the median of their five CUPTI spans, as the
    engine summarises its samples. One sample alone can differ on a GPU shared with another process: the other
    context's time slice can fall between the start event and the first kernel, which the events hold and CUPTI's
    span does not (on an H200 beside a neighbour 50 % busy, 2026-11-29: 299.9 µs against 241.5 for the chain). For a
    chain of kernels, and for a step whose host takes 2 ms (``time.sleep``) for far less GPU work, which the clock
    reads without the host's time."""
    import json
    import statistics
    import tempfile
    import time

    import torch

    from sdpa_tui.engine.measuring import clocks

    device = torch.device("cuda")
    x = torch.randn(2048, 2048, device=device, dtype=torch.bfloat16)

    def chain() -> None:
        y = x
        for _ in range(8):
            y = torch.relu(y @ x)

    def slow_host() -> None:
        time.sleep(0.002)
        x @ x

    clocks.sleep_cycles_per_us(device)  # calibrated before the profiler starts
    for step, host_us in ((chain, 1_000.0), (slow_host, 4_000.0)):
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        pairs = []  # (the clock's sample, CUPTI's span of the same calls), a call each
        for _ in range(5):
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                    torch.profiler.ProfilerActivity.CUDA]) as prof:
                sample = clocks.queued_us(step, device, host_us)
                torch.cuda.synchronize()
            assert sample is not None, step.__name__
            with tempfile.NamedTemporaryFile(suffix=".json") as f:
                prof.export_chrome_trace(f.name)
                events = json.load(open(f.name))["traceEvents"]
            gpu = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES),
                         key=lambda e: e["ts"])
            waits = [i for i, e in enumerate(gpu) if "sleep" in e["name"] or "spin" in e["name"]]
            calls = gpu[waits[-1] + 1:]  # the sample the clock returned: the calls after its last wait
            pairs.append((sample, (max(e["ts"] + e["dur"] for e in calls) - calls[0]["ts"]) / clocks.QUEUED_CALLS))
        queued = statistics.median(q for q, _ in pairs)
        cupti = statistics.median(c for _, c in pairs)
        assert abs(queued - cupti) <= max(0.05 * cupti, 2.0), (step.__name__, queued, cupti, pairs)
    assert queued < 500.0  # one 2048² matmul, not the host's 2 ms
