"""The real multi-engine path on the GPU machine: one engine per GPU, NVML for all of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.paths import REPO
from support.waiting import wait_until_async


@pytest.mark.cuda
def test_report_devices_all_on_every_gpu(tmp_path) -> None:
    from sdpa_tui.telemetry.host_gpus import gpu_count

    count, why = gpu_count()
    assert count, f"CUDA works but NVML sees no GPU: {why}"
    out = tmp_path / "devices.json"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # piped, no COLUMNS (xdist sets 80): 160 wide
    proc = subprocess.run([sys.executable, "-m", "sdpa_tui", "report", "--devices", "all", "--duration", "1",
                           "--json", str(out)], cwd=REPO, capture_output=True, text=True, timeout=400, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "outliers:" in proc.stdout and f"the same workload on {count} GPUs" in proc.stdout
    data = json.loads(out.read_text())
    gpus = data["comparison"]["gpus"]
    assert [g["gpu"] for g in gpus] == list(range(count)) and data["comparison"]["clock"] == "gpu"
    assert all(g["backend"] and g["kernel"] and g["gpu_us"] > 0 for g in gpus)
    assert min(g["ratio_to_fastest"] for g in gpus) == 1.0
    # each engine ran on its own GPU: the device each reported matches the NVML index asked for
    assert [d["report"]["environment"]["device"] for d in data["devices"]] == [f"cuda:{i}" for i in range(count)]
    # and timed its own GPU: an engine on cuda:1 that left cuda:0 current timed cuda:0's idle stream, so its
    # GPU/call fell to 0.0 µs or doubled, and its matmul peak read 3.9e+06 TFLOP/s (two H200s, 2026-11-26)
    for device in data["devices"]:
        report = device["report"]
        assert all(0 < peak["tflops"] < 5000 for peak in report["peak_tflops"].values()), report["peak_tflops"]
        for row in report["backends"]:
            if row["status"] == "ok":  # a CUDA graph of the calls cannot run faster than its kernels
                assert row["gpu_us"] >= 0.8 * row["kernel_us"], (device["gpu"], row["backend"], row["gpu_us"])
    peaks = [max(p["tflops"] for p in d["report"]["peak_tflops"].values()) for d in data["devices"]]
    names = [d["report"]["environment"]["device_name"] for d in data["devices"]]
    for name in set(names):  # GPUs of one model measure one matmul peak, within a few percent
        same = [p for p, n in zip(peaks, names) if n == name]
        assert max(same) < 1.25 * min(same), (name, same)


@pytest.mark.cuda
async def test_live_side_by_side_measures_every_gpu() -> None:
    import asyncio

    from sdpa_tui.commands.monitor import make_app
    from sdpa_tui.core.backends import ALL_BACKENDS
    from sdpa_tui.core.workload import Workload
    from sdpa_tui.telemetry.host_gpus import gpu_count

    count, _ = gpu_count()
    devices = tuple(range(count))
    app = make_app(Workload(), ALL_BACKENDS, devices=devices)
    async with app.run_test(size=(120, 40)):
        def every_gpu_measured() -> dict | None:
            sessions = {**app.controller.sessions_by_gpu, app.lab_gpus.watched_gpu: app.session}
            return sessions if app.host_gpus and all(i in sessions and sessions[i].dispatch for i in devices) else None

        sessions = await wait_until_async(every_gpu_measured, 180, "a dispatch from every GPU's engine (each imports "
                                          "torch and warms up)", asyncio.sleep, every=0.25)
        assert app.host_gpus is not None and app.host_gpus.count == count
        assert all(sessions[i].dispatch is not None for i in devices)
        assert set(app.lab_gpus.measuring_gpus) == set(devices)

        def read_knowing_our_pids() -> frozenset[int] | None:  # the poller learns our engines' pids every 2 s
            pids = app.engine.engine_pids
            return pids if all(pids <= app.host_gpus.get(i).own_pids for i in devices) else None

        pids = await wait_until_async(read_knowing_our_pids, 30, "a GPU reading that knows our engines' pids",
                                      asyncio.sleep, every=0.25)
        for i in devices:
            gpu = app.host_gpus.get(i)
            if gpu.processes is not None:  # our engines are never "other processes"
                assert not pids & {p.pid for p in gpu.other_processes}
