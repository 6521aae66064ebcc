"""``--devices``: checked against the GPUs NVML sees (a fake pynvml here), one line and exit 2
when wrong; ``report --devices`` with real engine processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from support import fake_pynvml
from support.fake_pynvml import FakeGpu
from support.paths import REPO

from sdpa_tui import cli
from sdpa_tui.telemetry import device_choice


def gpu_host(monkeypatch: pytest.MonkeyPatch, gpus: list[FakeGpu] | None = None) -> None:
    """A host with these GPUs (a fake pynvml) and a torch built with CUDA."""
    fake_pynvml.install(monkeypatch, gpus)
    monkeypatch.setattr(device_choice, "torch_cuda_version", lambda: "12.8")


def refuse(argv: list[str], capsys: pytest.CaptureFixture) -> str:
    with pytest.raises(SystemExit) as exit_info:
        cli.parse(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sdpa-tui: error: "), err
    return err


@pytest.mark.parametrize("argv", [["--devices", "2"], ["report", "--devices", "0,2"], ["--devices", "cuda:7"]])
def test_an_index_out_of_range_exits_2(argv, monkeypatch, capsys) -> None:
    gpu_host(monkeypatch, [FakeGpu(), FakeGpu()])
    err = refuse(argv, capsys)
    assert "is out of range: this host has 2 GPU(s), 0 to 1" in err


@pytest.mark.parametrize("value", ["", "x", "0;1", "-1", "all,0"])
def test_malformed_lists_exit_2(value, monkeypatch, capsys) -> None:
    fake_pynvml.install(monkeypatch, [FakeGpu(), FakeGpu()])
    assert "takes 'all' or GPU indices" in refuse(["report", "--devices", value], capsys)


@pytest.mark.parametrize("before", [True, False])
def test_devices_resolved_against_the_host(before, monkeypatch) -> None:
    gpu_host(monkeypatch)  # 8 GPUs
    argv = ["--devices", "all", "report"] if before else ["report", "--devices", "all"]
    assert cli.parse(argv)[0].devices == tuple(range(8))
    assert cli.parse(["report", "--devices", "5,1"])[0].devices == (5, 1)
    assert cli.parse(["report"])[0].devices is None


def test_only_the_gpus_cuda_visible_devices_leaves_are_measured(monkeypatch, capsys) -> None:
    gpu_host(monkeypatch, [FakeGpu() for _ in range(4)])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,3")
    assert cli.parse(["report", "--devices", "all"])[0].devices == (1, 3)
    assert cli.parse(["report", "--devices", "3"])[0].devices == (3,)
    err = refuse(["report", "--devices", "0,1"], capsys)
    assert "GPU 0 is hidden by CUDA_VISIBLE_DEVICES=1,3 (visible: GPU 1, 3)" in err


def test_only_mig_instances_visible_exits_2(monkeypatch, capsys) -> None:
    gpu_host(monkeypatch, [FakeGpu(), FakeGpu()])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-4f1c0ab2-0000-0000-0000-000000000000")
    assert "CUDA sees no whole GPU here (MIG instances" in refuse(["report", "--devices", "all"], capsys)


def test_gpus_but_a_torch_without_cuda_exits_2(monkeypatch, capsys) -> None:
    fake_pynvml.install(monkeypatch, [FakeGpu(), FakeGpu()])
    monkeypatch.setattr(device_choice, "torch_cuda_version", lambda: None)
    assert "this torch build has no CUDA; use --device cpu" in refuse(["report", "--devices", "all"], capsys)


def test_no_gpu_here_one_line_exit_2(monkeypatch, capsys) -> None:
    """The decision for a machine without GPUs: refuse (exit 2), pointing at --device cpu."""
    fake_pynvml.install(monkeypatch, init_error=fake_pynvml.LIBRARY_NOT_FOUND)
    err = refuse(["report", "--devices", "all"], capsys)
    assert "no GPU found on this host (NVML Shared Library Not Found); use --device cpu" in err


def test_report_devices_all_on_the_real_cpu_machine() -> None:
    """The real command on this machine (no GPU, or no NVML): refused at once, before torch."""
    proc = subprocess.run([sys.executable, "-m", "sdpa_tui", "report", "--devices", "all"], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env=_env_without_gpu())
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "no GPU found on this host" in proc.stderr


def _env_without_gpu() -> dict[str, str]:
    import os

    env = dict(os.environ, PYTHONPATH=str(REPO))
    return env


def _two_gpu_report(tmp_path, monkeypatch, capsys) -> tuple[int, str, dict]:
    from sdpa_tui.commands.report_devices import run_devices_report

    gpu_host(monkeypatch, [FakeGpu(), FakeGpu()])
    out = tmp_path / "devices.json"
    args, workload, backends = cli.parse(["report", "--devices", "all", "--seq", "64", "--heads", "2",
                                          "--backends", "math", "--duration", "0.3", "--json", str(out)])
    code = run_devices_report(args, workload, backends)
    return code, capsys.readouterr().out, json.loads(out.read_text())


def test_report_devices_says_which_engine_failed(tmp_path, monkeypatch, capsys) -> None:
    """Real engines asked for cuda:0 and cuda:1 on a torch without CUDA (the parent was made to
    believe it had CUDA, as if the engines' torch differed): each GPU's failure is said in its
    own row, nothing is compared, exit 1 (skipped where CUDA works)."""
    proc = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                          capture_output=True, text=True, timeout=120)
    if proc.stdout.strip() != "False":
        pytest.skip("CUDA works here: see test_engine_cuda.py")
    code, text, data = _two_gpu_report(tmp_path, monkeypatch, capsys)
    assert code == 1
    assert text.count("the engine failed: RuntimeError: cuda:") == 2
    assert [g["note"].startswith("engine failed") for g in data["comparison"]["gpus"]] == [True, True]
    assert data["comparison"]["outliers"] == [] and all("error" in d for d in data["devices"])


def test_report_with_two_engines_at_once(tmp_path, monkeypatch, capsys) -> None:
    """Two real engine processes measure at the same time, each on the CPU in place of a GPU
    (this machine has none), which is enough to check the side-by-side path end to end."""
    from sdpa_tui.engine.host import device_engines

    monkeypatch.setattr(device_engines, "engine_device", lambda index: "cpu")
    code, text, data = _two_gpu_report(tmp_path, monkeypatch, capsys)
    assert code == 0, text
    assert "GPU 0" in text and "GPU 1" in text and "the same workload on 2 GPUs" in text
    assert "outliers:" in text
    assert [d["gpu"] for d in data["devices"]] == [0, 1]
    gpus = data["comparison"]["gpus"]
    assert [g["backend"] for g in gpus] == ["Math", "Math"]
    # the CPU has no GPU / call clock: the kernel clock (the profiler's op sum) is compared
    assert data["comparison"]["clock"] == "kernel"
    assert all(g["kernel_us"] > 0 and g["eager_us"] > 0 and g["gpu_us"] is None for g in gpus)
    assert min(g["ratio_to_fastest"] for g in gpus) == 1.0
    assert [d["gpu_state"] for d in data["devices"]] == ["ok", "ok"]


def test_sweep_refuses_devices(monkeypatch, capsys) -> None:
    fake_pynvml.install(monkeypatch, [FakeGpu(), FakeGpu()])
    assert "not to sweep" in refuse(["--devices", "all", "sweep"], capsys)


def test_the_reports_gpu_state_names_other_processes_not_its_own_engines() -> None:
    """On two H200s (2026-11-26) each GPU's state read "shared: pid …" for the report's own engines and profiler
    processes, which its threads had started: only a process outside this one's tree is another user."""
    import threading

    from sdpa_tui.commands.report_devices import GpuStates
    from sdpa_tui.telemetry.gpu_snapshot import GpuProcess, GpuSnapshot
    from sdpa_tui.telemetry.host_gpus import HostGpus

    sleep = [sys.executable, "-c", "import subprocess, sys, time; "
             "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); time.sleep(30)"]
    started: list[subprocess.Popen] = []
    thread = threading.Thread(target=lambda: started.append(subprocess.Popen(sleep)))  # an engine's way
    thread.start()
    thread.join()
    # another user's process: its parent exits at once, so it is no longer in this process's tree
    stranger = int(subprocess.run(["sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True,
                                  check=True).stdout)
    try:
        from sdpa_tui.engine.host.client import child_pids

        engine = started[0]
        for _ in range(100):  # until the engine has started its own child (its "profiler process")
            if child_pids(engine.pid):
                break
            threading.Event().wait(0.05)
        [profiler] = child_pids(engine.pid)
        processes = tuple(GpuProcess(pid, 1 << 30, "python3") for pid in (engine.pid, profiler, stranger))
        states = GpuStates()
        states.add(HostGpus((GpuSnapshot(index=0, processes=processes), GpuSnapshot(index=1, processes=())),))
        assert states.text() == {0: f"shared: pid {stranger} python3", 1: "ok"}
    finally:
        from sdpa_tui.engine.host.client import descendants

        for pid in (stranger, *descendants(started[0].pid)):
            os.kill(pid, signal.SIGKILL)
        for proc in started:
            proc.kill()
            proc.wait()
