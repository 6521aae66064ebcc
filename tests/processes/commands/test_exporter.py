"""Prometheus metrics: the real exporter scraped over HTTP on the loopback, the collector on a real
H100 report, the live monitor's ``--metrics-port``, the Grafana dashboard, and bad inputs."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.paths import REPO, REPORTS
from support.real_data import session_from_report
from support.waiting import wait_until_async

from sdpa_tui.cli import main
from sdpa_tui.core.lab.session import Session
from sdpa_tui.exports.metrics.lab_metrics import LatestMetrics
from sdpa_tui.exports.metrics.metrics_server import serve_metrics
from sdpa_tui.telemetry.gpu_snapshot import GpuProcess, GpuSnapshot

H100_SMALL = REPORTS / "h100-torch2.11" / "report-small.json"
DASHBOARD = REPO / "docs" / "grafana" / "sdpa-tui-dashboard.json"
CPU_WORKLOAD = ["--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "64", "--head-dim", "32"]
LIVE_TIMEOUT_S = 90.0


def scrape(url: str) -> dict[str, list]:
    """The samples of each family at ``url``, parsed by prometheus_client's own parser."""
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def value(samples: list, **labels: str) -> float:
    found = [s.value for s in samples if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(found) == 1, f"{labels}: {found}"
    return found[0]


def h100_gpu() -> GpuSnapshot:
    """NVML as read on an H100 (the values are a plausible reading; the test checks units)."""
    return GpuSnapshot(index=0, name="NVIDIA H100 80GB HBM3", utilization_gpu_pct=97, utilization_mem_pct=41,
                       memory_used_bytes=2 * 2**30, memory_total_bytes=85_017_493_504, sm_clock_mhz=1980,
                       mem_clock_mhz=2619, sm_clock_max_mhz=1980, power_w=412.5, power_limit_w=700.0,
                       temperature_c=51, clock_event_reasons=("SW power cap",),
                       processes=(GpuProcess(1234, 2**30), GpuProcess(99, 2**20)), own_pids=frozenset({1234}))


# ------------------------------------------------------------------ the collector, on real data
def test_collector_on_a_real_h100_report():
    metrics = LatestMetrics("cuda")
    metrics.publish(session_from_report(H100_SMALL), h100_gpu())
    with _served(metrics) as url:
        families = scrape(url)
    d = {"device": "cuda:0"}
    gpu = families["sdpa_tui_gpu_seconds"]
    assert value(gpu, backend="CUDNN_ATTENTION", quantile="0.5", **d) == pytest.approx(9.633999604445238e-6)
    assert value(families["sdpa_tui_kernel_seconds"], backend="MATH", quantile="0.5", **d) == pytest.approx(105.0085e-6)
    assert value(families["sdpa_tui_dispatch_choice"], backend="CUDNN_ATTENTION", **d) == 1
    assert sum(s.value for s in families["sdpa_tui_dispatch_choice"]) == 1
    kernel = [s for s in families["sdpa_tui_main_kernel_info"] if s.labels["backend"] == "FLASH_ATTENTION"]
    assert kernel[0].name == "sdpa_tui_main_kernel_info"
    assert kernel[0].labels["kernel"].startswith("void pytorch_flash::flash_fwd_splitkv_kernel<")
    info = families["sdpa_tui_environment_info"][0].labels
    assert info["device_name"] == "NVIDIA H100 80GB HBM3" and info["cudnn_version"] == "9.19.0"
    # NVML in base units
    assert value(families["sdpa_tui_nvml_utilization_ratio"], **d) == pytest.approx(0.97)
    assert value(families["sdpa_tui_nvml_sm_clock_hertz"], **d) == 1.98e9
    assert value(families["sdpa_tui_nvml_throttled"], **d) == 1
    assert value(families["sdpa_tui_nvml_other_processes"], **d) == 1  # the engine's own pid is not counted
    assert value(families["sdpa_tui_nvml_clock_event_reason"], reason="SW power cap", **d) == 1


class _served:
    def __init__(self, metrics: LatestMetrics) -> None:
        self.server = serve_metrics(metrics, 0)

    def __enter__(self) -> str:
        return self.server.url

    def __exit__(self, *exc: object) -> None:
        self.server.stop()


def test_before_the_engine_is_ready_only_the_state_is_served():
    metrics = LatestMetrics("cuda:1")
    metrics.publish(Session(session_from_report(H100_SMALL).workload), None)
    with _served(metrics) as url:
        families = scrape(url)
    assert value(families["sdpa_tui_engine_ready"], device="cuda:1") == 0
    assert families["sdpa_tui_eager_seconds"] == [] and value(families["sdpa_tui_nvml_up"], device="cuda:1") == 0


def test_the_dashboard_reads_only_metrics_that_exist():
    metrics = LatestMetrics("cuda")
    metrics.publish(session_from_report(H100_SMALL), h100_gpu())
    served = {m.name for m in metrics.collect()} | {s.name for m in metrics.collect() for s in m.samples}
    served |= _watch_metric_names()  # the panels of watched jobs (sdpa-tui watch --metrics-port)
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs += [v["definition"] for v in dashboard["templating"]["list"] if "definition" in v]
    used = {name for e in exprs for name in re.findall(r"\bsdpa_tui_\w+", e)}
    assert len(used) >= 15 and used <= served, used - served


def _watch_metric_names() -> set[str]:
    families = list(_watched_training_metrics().collect())
    return {m.name for m in families} | {s.name for m in families for s in m.samples}


def _watched_training_metrics(backward_check=None):
    """Two ranks of a bf16 training call on cuDNN, their sampled backwards checked as given."""
    from sdpa_tui.core.calls.call_signature import CallSignature
    from sdpa_tui.core.calls.gradient_check import GradientCheck
    from sdpa_tui.core.calls.watch_report import build_report
    from sdpa_tui.core.calls.watched_calls import BackwardStats, CallStats, OutputCheck, ProcessState
    from sdpa_tui.exports.metrics.watch_metrics import WatchMetrics

    sig = CallSignature((2, 8, 512, 64), (2, 8, 512, 64), "torch.bfloat16", "cuda:0", grad=True)
    backward = backward_check or GradientCheck(samples=2, compared=1, tolerance=5e-2)
    states = [ProcessState(pid=10 + r, rank=r, calls=[CallStats(
        sig, count=5, backend="CUDNN_ATTENTION", kernel_us=[9.0, 9.5], backward=BackwardStats("CUDNN_ATTENTION", [30.0]),
        check=OutputCheck(samples=1, ok=True, tolerance=3e-2, backward=GradientCheck.from_dict(backward.to_dict())))])
        for r in range(2)]
    metrics = WatchMetrics(host="h")
    metrics.publish(build_report(["train.py"], None, states, 1.0))
    return metrics


def test_watch_counts_nonfinite_outputs_and_gradients_by_backend_direction_and_cause():
    """Issue 35: a NaN from cuDNN's backward and one arriving from upstream are told apart in the metrics."""
    from sdpa_tui.core.calls.gradient_check import GradientCheck

    flagged = GradientCheck(samples=3, nonfinite={"dq": 3, "dk": 1}, upstream_nonfinite=1, tolerance=5e-2)
    families = {m.name: m for m in _watched_training_metrics(flagged).collect()}
    counts = {(s.labels["backend"], s.labels["direction"], s.labels["cause"]): s.value
              for s in families["sdpa_tui_watch_nonfinite"].samples if s.name.endswith("_total")}
    assert counts == {("CUDNN_ATTENTION", "forward", "backend"): 0.0, ("CUDNN_ATTENTION", "backward", "backend"): 6.0,
                      ("CUDNN_ATTENTION", "backward", "upstream"): 2.0, ("CUDNN_ATTENTION", "backward", "inputs"): 0.0}


# ------------------------------------------------------------------ the real exporter, real engine
def test_exporter_serves_the_real_engine_on_the_loopback():
    proc = subprocess.Popen([sys.executable, "-m", "sdpa_tui", "exporter", "--port", "0", *CPU_WORKLOAD],
                            cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stderr.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/metrics", first).group(0)
        deadline = time.monotonic() + LIVE_TIMEOUT_S
        while True:
            families = scrape(url)
            eager = families.get("sdpa_tui_eager_seconds", [])
            live = {s.labels["backend"] for s in eager}
            if {"FLASH_ATTENTION", "MATH"} <= live and families.get("sdpa_tui_dispatch_choice"):
                break
            assert time.monotonic() < deadline, f"no live numbers within {LIVE_TIMEOUT_S:.0f} s"
            time.sleep(0.5)
        d = {"device": "cpu"}
        for backend in ("FLASH_ATTENTION", "MATH"):
            median = value(eager, backend=backend, quantile="0.5", **d)
            assert 0 < median <= value(eager, backend=backend, quantile="0.9", **d)
        eligible = families["sdpa_tui_backend_eligible"]
        assert value(eligible, backend="CUDNN_ATTENTION", **d) == 0 and value(eligible, backend="MATH", **d) == 1
        picks = [s.labels["backend"] for s in families["sdpa_tui_dispatch_choice"] if s.value == 1]
        assert picks in (["FLASH_ATTENTION"], ["MATH"])
        assert value(families["sdpa_tui_engine_ready"], **d) == 1
        stamp = value(families["sdpa_tui_last_sample_timestamp_seconds"], backend="MATH", **d)
        assert time.time() - 60 < stamp <= time.time()
        assert value(families["sdpa_tui_nvml_up"], **d) == 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        rest = proc.stderr.read()
        assert "Traceback" not in rest and "engine ready on the CPU" in rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------ the live monitor
async def test_live_monitor_publishes_its_session(tmp_path):
    from support.ui_fakes import FakeEngine

    from sdpa_tui.core.workload import Workload
    from sdpa_tui.ui.live_app import LiveApp

    engine = FakeEngine()
    app = LiveApp(Session(Workload()), engine, None, export_dir=str(tmp_path))
    app.metrics = LatestMetrics("cuda")
    with _served(app.metrics) as url:
        async with app.run_test(size=(120, 40)) as pilot:
            engine.feed_live(app)
            # the app publishes once a second
            families = await wait_until_async(
                lambda: next((f for f in [scrape(url)] if f.get("sdpa_tui_eager_seconds")), None), 10,
                "the live session on /metrics", pilot.pause)
    eager = families["sdpa_tui_eager_seconds"]
    assert {s.labels["backend"] for s in eager} == {"CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH"}
    assert value(families["sdpa_tui_dispatch_choice"], device="cuda:0", backend="CUDNN_ATTENTION") == 1


# ------------------------------------------------------------------ bad inputs
def _busy_port() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def test_a_port_in_use_exits_2_with_one_line(capsys):
    with _busy_port() as busy:
        code = main(["exporter", "--port", str(busy.getsockname()[1]), *CPU_WORKLOAD])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "in use: choose another port" in err


@pytest.mark.parametrize("argv, words", [
    (["exporter", "--address", "example.org"], "must be an IP address"),
    (["exporter", "--port", "70000"], "from 0 (any free port) to 65535"),
])
def test_bad_exporter_options_exit_2(capsys, argv, words):
    code = main([*argv, *CPU_WORKLOAD])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and words in err


@pytest.mark.parametrize("argv, words", [
    (["--metrics-address", "0.0.0.0"], "--metrics-address needs --metrics-port"),
    (["--metrics-port", "-1"], "from 0 (any free port) to 65535"),
    (["--metrics-port", "9468", "--metrics-address", "::1x"], "must be an IP address"),
])
def test_bad_live_metrics_options_exit_2(capsys, argv, words):
    with pytest.raises(SystemExit) as exit_:
        main([*argv, *CPU_WORKLOAD])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and words in err


def test_the_live_monitor_refuses_a_port_in_use(capsys, monkeypatch):
    """Checked before the app starts: a port in use ends it with one line, no UI drawn."""
    from sdpa_tui import cli
    from sdpa_tui.commands import monitor

    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    with _busy_port() as busy:
        args, workload, backends = cli.parse(["--metrics-port", str(busy.getsockname()[1]), *CPU_WORKLOAD])
        code = monitor.run_app(args, workload, backends)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "in use: choose another port" in err


def test_a_non_loopback_address_is_said_once_served(tmp_path):
    """--address 0.0.0.0 is allowed when asked for, and the exporter says who can read it."""
    proc = subprocess.Popen([sys.executable, "-m", "sdpa_tui", "exporter", "--port", "0", "--address", "0.0.0.0",
                             *CPU_WORKLOAD], cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        first, second = proc.stderr.readline(), proc.stderr.readline()
        assert re.search(r"serving http://0\.0\.0\.0:\d+/metrics", first)
        assert "other hosts can read the metrics" in second
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
