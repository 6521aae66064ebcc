"""Every GPU of the host through NVML, with a fake ``pynvml`` module put in ``sys.modules``."""

from __future__ import annotations

import sys
import threading

import pytest
from support import fake_pynvml
from support.fake_pynvml import NOT_SUPPORTED, FakeGpu
from support.paths import BENCHMARKS

from sdpa_tui.telemetry.host_gpus import HostGpuPoller, HostGpuReader, HostGpus, gpu_count
from sdpa_tui.telemetry.nvml import NOT_INSTALLED


def test_reads_every_gpu_of_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_pynvml.install(monkeypatch, fake_pynvml.eight_gpus(engine_pids=(4242,)))
    with HostGpuReader() as reader:
        host = reader.snapshot(own_pids={4242})
    assert host.reason is None and host.count == 8
    assert [g.index for g in host.gpus] == list(range(8))
    assert all(g.name == "NVIDIA H100 80GB HBM3" for g in host.gpus)
    assert host.get(0).utilization_gpu_pct == 97 and host.get(1).utilization_gpu_pct == 0
    assert host.get(3).sm_clock_mhz == 1605 and host.get(3).power_w == pytest.approx(699.0)
    assert host.get(9) is None and host.read_s >= 0


def test_throttle_reasons_decoded_per_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_pynvml.install(monkeypatch)
    host = HostGpuReader().snapshot()
    assert host.get(3).clock_event_reasons == ("SW power cap",)
    assert host.get(7).clock_event_reasons == ("SW thermal slowdown", "HW thermal slowdown")
    assert host.get(0).clock_event_reasons == ("none",)
    assert host.throttled == (3, 7)


def test_own_engines_are_not_other_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_pynvml.install(monkeypatch, fake_pynvml.eight_gpus(engine_pids=(4242, 4343)))
    host = HostGpuReader().snapshot(own_pids={4242, 4343})
    assert host.shared == (5,)
    assert [p.name for p in host.get(5).other_processes] == ["train.py"]
    # without our pids, our own engines look like strangers
    assert HostGpuReader().snapshot().shared == (0, 1, 5)


def test_a_failing_field_on_one_gpu_is_na_there_only(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = [FakeGpu(), FakeGpu(fail={"nvmlDeviceGetPowerUsage": NOT_SUPPORTED})]
    fake_pynvml.install(monkeypatch, gpus)
    host = HostGpuReader().snapshot()
    assert host.get(0).power_w is not None and host.get(0).errors == {}
    assert host.get(1).power_w is None and host.get(1).why("power_w") == "Not Supported"
    assert host.get(1).available


def test_no_pynvml_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import raises ImportError
    host = HostGpuReader().snapshot()
    assert host == HostGpus((), NOT_INSTALLED, host.time, host.read_s)
    assert gpu_count() == (None, NOT_INSTALLED)


def test_nvml_library_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_pynvml.install(monkeypatch, init_error=fake_pynvml.LIBRARY_NOT_FOUND)
    reader = HostGpuReader()
    assert reader.snapshot().reason == "NVML Shared Library Not Found"
    assert reader.count() is None
    assert gpu_count() == (None, "NVML Shared Library Not Found")


def test_no_gpu_at_all(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_pynvml.install(monkeypatch, [])
    assert HostGpuReader().snapshot().reason == "NVML sees no GPU"
    assert gpu_count() == (0, "NVML sees no GPU")


def test_close_releases_every_init(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = fake_pynvml.install(monkeypatch)
    reader = HostGpuReader()
    reader.snapshot()
    assert mod.inits == 8  # one reference per GPU reader
    reader.close()
    assert mod.inits == 0


def test_poller_delivers_host_readings(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_pynvml.install(monkeypatch)
    got: list[HostGpus] = []
    done = threading.Event()

    def deliver(host: HostGpus) -> None:
        got.append(host)
        if len(got) >= 2:
            done.set()

    poller = HostGpuPoller(deliver, interval=0.01, own_pids={1})
    poller.start()
    try:
        assert done.wait(10)
    finally:
        poller.stop()
    assert all(h.count == 8 for h in got) and not poller.running


def test_poll_benchmark_runs_on_fake_nvml(monkeypatch: pytest.MonkeyPatch, tmp_path, capsys) -> None:
    import json
    import runpy

    fake_pynvml.install(monkeypatch)
    out = tmp_path / "poll.json"
    script = BENCHMARKS / "monitor" / "nvml_poll.py"
    monkeypatch.setattr(sys, "argv", [str(script), "--polls", "3", "--interval", "0", "--json", str(out)])
    with pytest.raises(SystemExit) as code:
        runpy.run_path(str(script), run_name="__main__")
    assert code.value.code == 0
    result = json.loads(out.read_text())
    assert result["gpus"] == 8 and result["polls"] == 3 and result["poll_ms"]["median"] >= 0
    assert "one reading of all GPUs: median" in capsys.readouterr().out
