"""The real engine, in its child process, on the CPU with tiny shapes.

Few engine starts (each imports torch, seconds): one headless ``measure`` run, one engine
reused for several configurations, one ``report`` subprocess, and the lifecycle tests.
Waits are bounded by generous deadlines; no assertion is about how long anything took.
"""

from __future__ import annotations

import itertools
import multiprocessing as mp
import os
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from support.engine_process import DEADLINE_S, ready_engine, wait_for
from support.paths import REPO

from sdpa_tui.core.backends import ALL_BACKENDS, Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.engine_commands import Configure
from sdpa_tui.core.protocol.records import EngineError, Log, Ready, Recycling, Sample
from sdpa_tui.core.traces.kernel_names import identify
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.child.run_state import FAULT_ENV
from sdpa_tui.engine.child.worker import EXIT_RECYCLE
from sdpa_tui.engine.host.client import EngineClient
from sdpa_tui.engine.host.headless import EngineFailed, measure
from sdpa_tui.engine.record_pipe import Channel, ChannelClosed
from sdpa_tui.exports.lab.report_tables import dispatch_line

pytestmark = pytest.mark.torch_range


TINY = {"batch": 1, "heads": 2, "kv_heads": 2, "seq": 64, "kv_seq": 64, "head_dim": 32}
FP32 = Workload(**TINY, dtype="fp32")
FP16 = Workload(**TINY, dtype="fp16")
RUNNING_ON_CPU = (Backend.FLASH, Backend.MATH)  # SDPA's two CPU backends
NO_CPU_KERNEL = (Backend.CUDNN, Backend.EFFICIENT)


def check_cpu_session(session: Session, enabled: tuple[Backend, ...]) -> None:
    env = session.environment
    assert env is not None and env.is_cpu and env.device == "cpu"
    assert env.torch_version and env.cpu_threads and env.cpu_threads >= 1
    if sys.platform.startswith("linux"):  # the profiler process's allocator regime too (cpu_allocator.py)
        assert env.cpu_allocator == "heap to 32 MiB (glibc)"
    rows = {r.backend: r for r in session.rows()}
    for backend in RUNNING_ON_CPU:
        row = rows[backend]
        assert row.status == "ok", (backend, row.status, row.reason)
        assert row.eager_us is not None and row.eager_us.median > 0
        assert row.gpu_us is None  # no GPU clock on the CPU
        assert row.kernel_us is not None and row.kernel_us.median > 0
        assert row.tflops is not None and row.tflops > 0
        assert row.peak_mib is None
        # the "kernels" of a CPU call are the ATen ops it ran
        assert row.kernels and all(k.category == "cpu_op" for k in row.kernels)
        assert all(k.name.startswith("aten::") for k in row.kernels)
        assert all(k.grid is None and k.block is None for k in row.kernels)
        assert row.main_kernel_full and row.main_kernel_full.startswith("aten::")
        for h in session.backends[backend].history:
            assert h.gpu_us is None and h.eager_us > 0
    # on the CPU the flash backend runs a CPU flash-attention op
    assert identify(rows[Backend.FLASH].main_kernel_full).family == "CPU flash attention"
    assert rows[Backend.MATH].speedup_vs_math == pytest.approx(1.0)
    for backend in NO_CPU_KERNEL:
        row = rows[backend]
        assert row.status == "not_eligible", (backend, row.status)
        assert row.reason and row.details
        assert row.eager_us is None and not row.kernels
    assert session.dispatch is not None
    assert session.dispatch.choice in enabled
    assert session.dispatch.choice in RUNNING_ON_CPU
    # every slice says how long it kept the device busy: the engine's duty cycle
    share = session.engine_busy.share()
    assert share is not None and 0 < share <= 1
    # the peak is a real ceiling: no backend runs faster than it (fp16 matmuls are slow on a CPU)
    peak = session.peaks[session.workload.dtype]
    assert peak.tflops > 0 and "fp32" in peak.detail
    for row in rows.values():
        if row.tflops is not None:
            assert row.tflops <= peak.tflops, (row.backend, row.tflops, peak)
            assert row.pct_of_peak is not None and 0 < row.pct_of_peak <= 100


# ------------------------------------------------------------------ headless measure (fp32)
@pytest.fixture(scope="module")
def fp32_session() -> Session:
    return measure(FP32, ALL_BACKENDS, device="cpu", duration_s=1.0, timeout_s=DEADLINE_S)


def test_headless_measure_fp32_on_the_cpu(fp32_session):
    check_cpu_session(fp32_session, ALL_BACKENDS)
    assert not fp32_session.errors
    # measure waits for enough samples of every running backend
    for backend in RUNNING_ON_CPU:
        assert len(fp32_session.backends[backend].eager) >= 5
    # the slices timed while the profiler process started (its interpreter and torch import beside them: after
    # the pick's first number, on the CPU) are in the history, named, and out of the medians
    history = sorted((h for b in RUNNING_ON_CPU for h in fp32_session.backends[b].history), key=lambda h: h.time)
    assert "profiler-starting" not in history[0].conditions
    assert any("profiler-starting" in h.conditions for h in history)
    for backend in RUNNING_ON_CPU:
        state = fp32_session.backends[backend]
        apart = [h.eager_us for h in state.history if "profiler-starting" not in h.conditions]
        assert state.eager_provisional == 0 and state.eager.values() == apart[-len(state.eager):]


def test_headless_fatal_engine_error_is_reported_with_its_message():
    # cuda:99 is refused by the engine, with or without a GPU on this box.
    with pytest.raises(EngineFailed) as info:
        measure(FP32, (Backend.MATH,), device="cuda:99", duration_s=0.5, timeout_s=DEADLINE_S)
    assert "cuda:99" in str(info.value)


# ------------------------------------------------------------------ one engine, several configurations
_config_ids = itertools.count(1_000)


class Engine:
    """An engine started for this module, with the environment it reported."""

    def __init__(self) -> None:
        self.client = EngineClient("cpu")
        self.client.start()
        records = wait_for(self.client, None, lambda rs: any(isinstance(r, Ready) for r in rs))
        self.environment = next(r for r in records if isinstance(r, Ready)).environment

    def configure(self, workload: Workload, enabled: tuple[Backend, ...]) -> Session:
        """A session for one new configuration; its config id is new, so older records are stale for it."""
        session = Session(workload, enabled)
        session.environment = self.environment
        session.config_id = next(_config_ids)
        assert self.client.send(Configure(session.config_id, workload, enabled, profile_every_s=0.5))
        return session

    def wait(self, session: Session | None, done: Callable[[list], bool]) -> list:
        return wait_for(self.client, session, done)

    def idle(self) -> None:
        """Nothing enabled: the engine stops measuring (leaving the CPUs to the other tests)."""
        self.client.send(Configure(next(_config_ids), FP32, ()))


@pytest.fixture(scope="module")
def engine():
    started = Engine()
    try:
        yield started
    finally:
        started.client.stop()


def settled(session: Session, samples: int = 3) -> Callable[[list], bool]:
    """Every enabled backend has a verdict, and the running ones samples and a kernel capture."""

    def done(_records) -> bool:
        if session.dispatch is None:
            return False
        for backend in session.enabled:
            state = session.backends[backend]
            if state.status in ("waiting",):
                return False
            if state.status == "ok" and (len(state.eager) < samples or not state.kernels):
                return False
        return True

    return done


def test_fp16_on_the_cpu(engine):
    session = engine.configure(FP16, ALL_BACKENDS)
    engine.wait(session, settled(session))
    engine.wait(session, lambda _: session.workload.dtype in session.peaks)  # sent after the first captures
    engine.idle()
    check_cpu_session(session, ALL_BACKENDS)


def test_only_math_enabled_dispatch_picks_math(engine):
    session = engine.configure(FP32, (Backend.MATH,))
    records = engine.wait(session, settled(session))
    engine.idle()
    assert session.dispatch.choice is Backend.MATH
    assert "SDPA picks MATH" in dispatch_line(session)
    mine = [r for r in records if getattr(r, "config_id", None) == session.config_id]
    assert {r.backend for r in mine if isinstance(r, Sample)} == {Backend.MATH}
    for backend in (Backend.CUDNN, Backend.FLASH, Backend.EFFICIENT):
        assert session.backends[backend].status == "disabled"


def test_no_backend_enabled_dispatch_says_no_kernel(engine):
    session = engine.configure(FP32, ())
    records = engine.wait(session, lambda _: session.dispatch is not None)
    assert session.dispatch.choice is None
    assert session.dispatch.reason
    assert "no kernel" in dispatch_line(session)
    assert not [r for r in records if isinstance(r, Sample) and r.config_id == session.config_id]
    assert all(s.status == "disabled" for s in session.backends.values())


def test_records_carry_the_configuration_they_were_measured_for(engine):
    first = engine.configure(FP32, (Backend.FLASH,))
    second = engine.configure(FP32, (Backend.MATH,))  # replaces the first at once
    records = engine.wait(second, settled(second, samples=2))
    engine.idle()
    for record in records:
        first.apply(record)
    by_id = lambda cid: [r for r in records if isinstance(r, Sample) and r.config_id == cid]  # noqa: E731
    assert {r.backend for r in by_id(second.config_id)} == {Backend.MATH}
    assert {r.backend for r in by_id(first.config_id)} <= {Backend.FLASH}
    assert second.dispatch.choice is Backend.MATH and second.dispatch.config_id == second.config_id
    assert not second.backends[Backend.FLASH].history
    assert not first.backends[Backend.MATH].history


# ------------------------------------------------------------------ the child's output never reaches the terminal
TORCH_MARKERS = ("Warning", "UserWarning", "profiler", "STAGE:", "Triggered internally", "USDT", ".cpp:", "[W", "[I")


def test_report_subprocess_prints_the_table_and_no_torch_output(tmp_path):
    json_path = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "sdpa_tui", "report", "--device", "cpu", "--batch", "1", "--heads", "2",
         "--seq", "64", "--head-dim", "32", "--dtype", "fp32", "--duration", "0.5", "--json", str(json_path)],
        cwd=REPO, capture_output=True, text=True, timeout=DEADLINE_S * 2,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr
    for line in proc.stderr.splitlines():
        assert not any(marker in line for marker in TORCH_MARKERS), f"torch output leaked: {line!r}"
    assert "Traceback" not in proc.stderr
    # the table is on stdout, one row per backend
    assert "SDPA backends" in proc.stdout
    for backend in ALL_BACKENDS:
        assert backend.label in proc.stdout
    assert "dispatch" in proc.stdout
    assert json_path.exists()


# ------------------------------------------------------------------ lifecycle
def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def measure_math(client: EngineClient) -> None:
    client.send(Configure(1, FP32, (Backend.MATH,)))
    wait_for(client, None, lambda rs: any(isinstance(r, Sample) for r in rs))  # busy measuring


def test_stop_leaves_no_child_alive():
    with ready_engine() as client:
        pid = client.pid
        measure_math(client)
    assert not client.alive
    assert client.exit_code is not None
    assert _gone(pid)
    assert all(p.pid != pid for p in mp.active_children())
    assert client.receive() == [] and client.send(Configure(2, FP32, ())) is False


def test_killed_engine_is_reported_dead_and_receive_never_raises():
    with ready_engine() as client:
        pid = client.pid
        measure_math(client)
        client.kill()
        assert not client.alive
        assert client.exit_code is not None and client.exit_code < 0  # killed by a signal
        # records already in the pipe may still come out; then nothing, and never an exception
        for _ in range(1_000):
            if client.receive(timeout=0.01) == []:
                break
        assert client.receive() == []
        assert client.receive(timeout=0.1) == []
        assert client.send(Configure(2, FP32, ())) is False
    assert _gone(pid)


def test_records_sent_just_before_the_peer_died_are_delivered():
    """The engine's last words (a fatal EngineError, its logs) must not be lost when its end closes."""
    ours, theirs = mp.Pipe(duplex=True)
    sender = Channel(theirs)
    sender.send(EngineError("CUDA context poisoned: test", fatal=True))
    sender.send(Log("last line"))
    sender.close()
    receiver = Channel(ours)
    records = receiver.receive_all(timeout=1.0)
    assert records == [EngineError("CUDA context poisoned: test", fatal=True), Log("last line")]
    with pytest.raises(ChannelClosed):
        receiver.receive_all(timeout=0.1)


# ------------------------------------------------------------------ replacing a grown engine
def test_an_engine_past_its_memory_allowance_says_so_and_exits_to_be_replaced(monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "leak")  # the engine keeps 1 MiB per slice
    with ready_engine() as client:
        assert client.send(Configure(1, FP32, (Backend.MATH,), profile_every_s=0.5, recycle_growth_mib=8.0))
        records = wait_for(client, None, lambda rs: any(isinstance(r, Recycling) for r in rs))
        recycling = next(r for r in records if isinstance(r, Recycling))
        assert recycling.rss_mib > recycling.baseline_mib > 0
        deadline = time.monotonic() + DEADLINE_S
        while client.alive and time.monotonic() < deadline:
            time.sleep(0.1)
        assert client.exit_code == EXIT_RECYCLE
