"""Kernel capture in its own process, apart from the timing engine (issue 12, item 8).

Real processes on the CPU: the profiler process answering bursts, each way it can fail
(killed, dies mid-burst, hangs, answers garbage, never gets ready), and the real engine,
which gets its kernels from it, never starts a profiler itself and carries on when the
profiler process fails. Waits are bounded by generous deadlines, never asserted on.
"""

from __future__ import annotations

import json
import os
import signal
import sys

import pytest
from support.engine_process import ready_engine, wait_for

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.engine_commands import CaptureKernels, Configure
from sdpa_tui.core.protocol.records import EngineHealth, KernelCapture, Log, Sample
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.profiler.profiler_client import ProfilerClient, ProfilerFailed
from sdpa_tui.engine.profiler.profiler_process import FAULT_ENV

pytestmark = pytest.mark.torch_range

_TORCH = __import__("torch")
KINETO_SAYS_START = not _TORCH.cuda.is_available() and tuple(map(int, _TORCH.__version__.split(".")[:2])) >= (2, 13)
"""Kineto writes a ``profiler_start`` line to fd 2 on a machine without a GPU from torch 2.13 on (2.13.0+cpu and
2.14.1+cu130 seen); torch 2.11 wrote none, on the H100 or without a GPU, so there the line cannot be looked for."""

TINY = Workload(batch=1, heads=2, kv_heads=2, seq=64, kv_seq=64, head_dim=32, dtype="fp32")
DEADLINE_S = 120.0  # against hangs on a loaded machine, not a performance claim


def request(backend: Backend = Backend.MATH, calls: int = 3, trace_path: str = "") -> CaptureKernels:
    return CaptureKernels(7, TINY, backend, calls, trace_path)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie is gone too
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


@pytest.fixture
def profiler():
    client = ProfilerClient("cpu")
    yield client
    client.close()


def test_a_burst_on_the_cpu_returns_the_ops_of_each_call(profiler, capfd):
    capture = profiler.capture(request(Backend.FLASH), DEADLINE_S)
    assert (capture.config_id, capture.backend, capture.error) == (7, Backend.FLASH, "")
    assert len(capture.kernel_us) == 3 and all(us > 0 for us in capture.kernel_us)
    names = [k.name for k in capture.kernels]
    assert {k.category for k in capture.kernels} == {"cpu_op"}, "no CUDA kernels on the CPU: its ops"
    assert "aten::_scaled_dot_product_flash_attention_for_cpu" in names, "the forced backend ran"
    math = profiler.capture(request(Backend.MATH), DEADLINE_S)
    assert "aten::_scaled_dot_product_attention_math" in [k.name for k in math.kernels]
    assert profiler.starts == 1, "one process served both bursts"
    # Kineto's lines went to the capture file, never to this process's fd 2
    lines = profiler.read_lines()
    if KINETO_SAYS_START:
        assert any("profiler_start" in line for line in lines)
    assert "profiler_start" not in capfd.readouterr().err


def test_the_trace_is_written_where_the_engine_asks(profiler, tmp_path):
    path = tmp_path / "trace-MATH.json"
    capture = profiler.capture(request(trace_path=str(path)), DEADLINE_S)
    assert capture.error == ""
    events = json.loads(path.read_text())["traceEvents"]
    assert sum(e.get("name") == "sdpa_tui.call" for e in events) >= 3


def test_an_unwritable_trace_path_is_said_and_the_kernels_still_come(profiler, tmp_path):
    capture = profiler.capture(request(trace_path=str(tmp_path / "missing" / "t.json")), DEADLINE_S)
    assert capture.kernels and capture.error.startswith("trace not written")


def test_a_killed_profiler_process_is_said_and_the_next_burst_gets_a_new_one(profiler):
    profiler.wait_ready()
    pid = profiler.pid
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(ProfilerFailed, match="killed by SIGKILL|closed its connection|was gone"):
        profiler.capture(request(), DEADLINE_S)
    assert gone(pid)
    capture = profiler.capture(request(), DEADLINE_S)
    assert capture.kernels and profiler.pid != pid and profiler.starts == 2


@pytest.mark.parametrize(
    ("fault", "said"),
    [("exit", "exited with status 9"), ("garbage", "not a record"), ("startup-exit", "exited with status 9")],
)
def test_a_profiler_process_that_fails_is_said_in_one_line(monkeypatch, profiler, fault, said):
    monkeypatch.setenv(FAULT_ENV, fault)
    with pytest.raises(ProfilerFailed, match=said) as failure:
        profiler.capture(request(), DEADLINE_S)
    assert "\n" not in str(failure.value)
    assert profiler.pid is None, "a failed profiler process is stopped"


def test_a_hung_profiler_process_is_stopped_at_its_timeout(monkeypatch, profiler):
    monkeypatch.setenv(FAULT_ENV, "hang")
    profiler.wait_ready()
    pid = profiler.pid
    with pytest.raises(ProfilerFailed, match="did not answer within 2 s"):
        profiler.capture(request(), 2.0)
    assert gone(pid)


def test_a_profiler_process_that_never_gets_ready_is_stopped():
    client = ProfilerClient("cpu", start_timeout_s=0.0)
    try:
        with pytest.raises(ProfilerFailed, match="was not ready within 0 s"):
            client.capture(request(), DEADLINE_S)
        assert client.pid is None
    finally:
        client.close()


def test_an_idle_profiler_process_leaves_by_itself():
    client = ProfilerClient("cpu", idle_exit_s=0.5)
    try:
        client.wait_ready()
        process = client._process
        process.wait(DEADLINE_S)
        assert process.returncode == 0
        capture = client.capture(request(), DEADLINE_S)  # a new one, no error
        assert capture.kernels and client.starts == 2
    finally:
        client.close()


# ------------------------------------------------------------------ the real engine
def records_until(client, done) -> list:
    return wait_for(client, None, done)


def test_the_engine_gets_its_kernels_from_a_profiler_process_and_starts_no_profiler():
    with ready_engine() as engine:
        engine.send(Configure(1, TINY, (Backend.MATH,), profile_every_s=0.5))
        seen = records_until(engine, lambda rs: sum(isinstance(r, KernelCapture) for r in rs) >= 2
                             and any(isinstance(r, EngineHealth) and r.profiler_pid for r in rs))
        profiler_pid = [r for r in seen if isinstance(r, EngineHealth)][-1].profiler_pid
        assert profiler_pid in engine.pids, "the UI counts the profiler process as ours, not 'another process'"
    captures = [r for r in seen if isinstance(r, KernelCapture)]
    assert all(c.error == "" and c.kernels for c in captures)
    health = [r for r in seen if isinstance(r, EngineHealth)]
    assert all(h.profiler_starts == 0 for h in health), "the timing engine never started a profiler"
    assert health[-1].profiler_pid not in (None, engine.pid)
    logs = [r.line for r in seen if isinstance(r, Log)]
    assert not KINETO_SAYS_START or any(line.startswith("profiler process: ") and "profiler_start" in line for line in logs), \
        "the profiler process's stderr comes as Log records"


def test_the_engine_says_a_failed_capture_and_carries_on(monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "exit")  # the engine's profiler processes inherit it: each dies at its burst
    session = Session(TINY, (Backend.MATH,))
    with ready_engine() as engine:
        engine.send(Configure(session.next_config_id(), TINY, (Backend.MATH,), profile_every_s=0.5))
        seen = wait_for(engine, session, lambda rs: any(isinstance(r, KernelCapture) for r in rs))
        failed = next(r for r in seen if isinstance(r, KernelCapture))
        more = wait_for(engine, session, lambda rs: sum(isinstance(r, Sample) for r in rs) >= 3)
    assert failed.error.startswith("the profiler process exited with status 9") and not failed.kernels
    assert session.backends[Backend.MATH].capture_error == failed.error, "the panel has it to show"
    assert sum(isinstance(r, Sample) for r in more) >= 3, "timing goes on"
    assert engine.exit_code == 0, "the engine neither died nor was replaced"


def test_on_the_cpu_the_profiler_process_times_with_the_engines_thread_count(monkeypatch):
    """The kernel clock read 30-120x the eager clock on a 2-core machine: the profiler process ran torch's
    default threads (2: 4,146 µs a call) where the timing engine runs one (59 µs) (issue 21, item 2)."""
    from sdpa_tui.engine.measuring.cpu_threads import available_cores, timing_threads

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    client = ProfilerClient("cpu")
    try:
        client.wait_ready()
        assert client.environment is not None
        assert client.environment.cpu_threads == timing_threads(available_cores(), None)
        if sys.platform.startswith("linux"):  # and in the timing engine's allocator regime (cpu_allocator.py)
            assert client.environment.cpu_allocator == "heap to 32 MiB (glibc)"
    finally:
        client.close()


@pytest.mark.skipif(not KINETO_SAYS_START, reason="this torch's Kineto writes no profiler_start line")
def test_on_the_cpu_the_profiler_process_has_started_kineto_once_when_it_says_ready():
    """Kineto's first session is the process's, not the first burst's: on the CPU the first burst is the only one a
    slow call's report reads (docs/lab-notes/cpu-kernel-clock.md)."""
    client = ProfilerClient("cpu")
    try:
        client.wait_ready()
        assert any("profiler_start" in line for line in client.read_lines())
    finally:
        client.close()


def test_a_profiler_process_that_left_by_itself_is_reaped_not_left_a_zombie():
    """Its idle exit while the engine was paused (the in-app sweep) left a zombie for minutes (issue 21, 4b)."""
    import time

    client = ProfilerClient("cpu", idle_exit_s=0.5)
    try:
        client.wait_ready()
        pid = client.pid
        deadline = time.monotonic() + DEADLINE_S
        while not gone(pid):  # it leaves after 0.5 s without a burst (a zombie counts as gone)
            assert time.monotonic() < deadline, "the idle profiler process never left"
            time.sleep(0.1)
        assert os.path.exists(f"/proc/{pid}"), "a zombie until someone waits for it"
        client.reap()
        assert not os.path.exists(f"/proc/{pid}"), "waited for: no zombie left"
        assert client.pid is None
    finally:
        client.close()



# ------------------------------------------------------------------ started before the engine imports torch
def test_no_profiler_process_is_started_early_for_the_cpu(monkeypatch):
    from sdpa_tui.engine.profiler import profiler_client

    assert profiler_client.start_early("cpu") is None, "two cores: the first number comes first"
    monkeypatch.setattr(profiler_client.os.path, "exists", lambda path: False)  # no NVIDIA driver here
    assert profiler_client.start_early("auto") is None


def test_an_early_profiler_process_for_a_gpu_torch_did_not_give_is_replaced_by_one_for_the_cpu(monkeypatch):
    import torch
    from support.engine_fakes import NoOutput, Recorder

    from sdpa_tui.engine.child.measuring_loop import Engine
    from sdpa_tui.engine.profiler import profiler_client

    monkeypatch.setattr(profiler_client.os.path, "exists", lambda path: path == "/dev/nvidiactl")
    early = profiler_client.start_early("auto")
    assert early is not None and early.device == "cuda:0" and early.pid is not None, "started for the first GPU"
    pid = early.pid
    engine = Engine(Recorder(), "auto", NoOutput(), profiler=early)
    try:
        mine = engine._profiler_for(torch.device("cpu"))  # torch found no GPU: the engine runs on the CPU
        assert mine is not early and mine.device == "cpu"
        assert early.pid is None and gone(pid), "the early process is stopped, not left behind"
    finally:
        early.close()


def test_an_early_profiler_process_for_the_engines_gpu_is_kept():
    import torch
    from support.engine_fakes import NoOutput, Recorder

    from sdpa_tui.engine.child.measuring_loop import Engine

    early = ProfilerClient("cuda:0")  # not started: only its device is compared
    engine = Engine(Recorder(), "cuda", NoOutput(), profiler=early)
    assert engine._profiler_for(torch.device("cuda:0")) is early


def test_a_profiler_process_whose_engine_died_while_it_started_exits_at_once():
    """PR_SET_PDEATHSIG is armed only once the interpreter reaches main(): an engine killed before that (a slow start
    on a loaded machine) left the profiler process running for good. It knows its engine's pid, so it sees it gone."""
    import socket
    import subprocess
    import sys

    from support.paths import REPO

    mine, theirs = socket.socketpair()
    not_its_parent = os.getpid() + 1_000_000  # no process: as the engine's pid once the engine is gone
    proc = subprocess.run([sys.executable, "-m", "sdpa_tui.engine.profiler.profiler_process", str(theirs.fileno()),
                           "cpu", "--parent", str(not_its_parent)], pass_fds=(theirs.fileno(),), cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    theirs.close()
    mine.settimeout(5)
    assert proc.returncode == 0, proc.stderr
    assert mine.recv(1) == b"", "it said nothing to the engine: no Ready"
    mine.close()
