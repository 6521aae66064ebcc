"""Stand-ins for the engine process and the NVML poller, so the UI can be driven without a GPU.

Everything fed to the app is built from real data:

- kernels and per-call kernel sums: the real H200 traces in ``fixtures/traces/h200-torch2.11/``
  (torch 2.11, CUDA 13.0, cuDNN 9.19), parsed with :mod:`sdpa_tui.core.traces.trace`;
- timings: DESIGN.md's measured table ([2, 8, 512, 64] fp16 forward);
- the environment: the H200 those traces were taken on.

As in memray's TUI tests, the app under test gets a fake engine that records what the app
sent, and the test posts records to the app the way the real supervisor thread does
(``EngineRecords`` / ``EngineEvent`` messages).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from sdpa_tui.core.backends import ALL_BACKENDS, Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.engine_commands import CaptureTraces, Configure
from sdpa_tui.core.protocol.records import (
    BackendStatus,
    Dispatch,
    KernelCapture,
    KernelInfo,
    Ready,
    Sample,
    TracesCaptured,
)
from sdpa_tui.core.traces import trace
from sdpa_tui.core.workload import Workload
from sdpa_tui.telemetry.gpu_snapshot import GpuProcess, GpuSnapshot
from sdpa_tui.ui.app import SdpaApp
from sdpa_tui.ui.messages import DeviceRecords, EngineEvent, EngineRecords
from sdpa_tui.ui.terminal.textual_internals import screen_strips
from support.real_data import FIXTURES, H200, H200_ORDER_IN_FORCE

TRACE_FIXTURES = {b: FIXTURES / f"{b.value}_3calls.json" for b in ALL_BACKENDS}

ENGINE_PID = 424242
T0 = 1_790_857_026.0  # the fixtures' baseTimeNanoseconds, in seconds: fixed, so snapshots are stable


# DESIGN.md, "Facts measured on real GPUs", H100 rows ([2, 8, 512, 64] fp16 fwd, hot L2):
# (graph replay / call, eager loop / call) in microseconds, per backend.
MEASURED_US: dict[Backend, tuple[float, float]] = {
    Backend.CUDNN: (9.7, 52.0),
    Backend.FLASH: (14.3, 65.0),
    Backend.EFFICIENT: (23.2, 34.0),
    Backend.MATH: (114.0, 377.0),
}
# Small fixed wobble around the measured values, so medians, p90 and sparklines have
# something to show and stay the same from run to run.
WOBBLE = (1.0, 1.03, 0.98, 1.01, 0.99, 1.05, 1.0, 0.97)

# Extra device memory of one call: not measured in the fixtures; derived from the shape
# [2, 8, 512, 64] fp16 (output 1 MiB + logsumexp; MATH materialises 512x512 scores per head
# in fp32 and fp16 several times over).
PEAK_BYTES = {
    Backend.CUDNN: 2**20 + 32 * 2**10,
    Backend.FLASH: 2**20 + 32 * 2**10,
    Backend.EFFICIENT: 2**20 + 32 * 2**10,
    Backend.MATH: 25 * 2**20,
}

INELIGIBLE_REASONS = {
    Backend.FLASH: "Flash attention requires head_dim <= 256; got 512",
    Backend.EFFICIENT: "Mem efficient attention requires last dimension of inputs to be <= 256; got 512",
    Backend.CUDNN: "cuDNN SDPA does not support head dim 512",
}


# ------------------------------------------------------------------ records from real data
@lru_cache(maxsize=None)
def trace_calls(backend: Backend) -> tuple[tuple[KernelInfo, ...], ...]:
    """The activities of each of the 3 calls in the backend's real H200 trace."""
    calls = trace.calls_of(trace.load_trace(TRACE_FIXTURES[backend]))
    return tuple(tuple(call) for call in calls)


def kernel_capture(config_id: int, backend: Backend) -> KernelCapture:
    calls = trace_calls(backend)
    return KernelCapture(
        config_id,
        backend,
        kernels=calls[0],
        kernel_us=tuple(sum(k.duration_us for k in call) for call in calls),
        peak_bytes=PEAK_BYTES[backend],
        time=T0,
    )


def samples(config_id: int, backend: Backend, count: int = 8) -> list[Sample]:
    graph_us, eager_us = MEASURED_US[backend]
    return [
        Sample(
            config_id,
            backend,
            gpu_us=round(graph_us * WOBBLE[i % len(WOBBLE)], 2),
            eager_us=round(eager_us * WOBBLE[(i + 3) % len(WOBBLE)], 1),
            gpu_method="graph",
            calls=64,
            time=T0 + 0.25 * (i + 1),
            busy_s=round(graph_us * 2 * 64 / 1e6, 6),  # 64 replayed and 64 eager calls
        )
        for i in range(count)
    ]


def live_records(
    config_id: int, enabled: Iterable[Backend] = ALL_BACKENDS, count: int = 8
) -> list[Any]:
    """What an engine reports for one configuration: statuses, dispatch, kernels, samples."""
    enabled = tuple(enabled)
    records: list[Any] = [BackendStatus(config_id, b, "ok") for b in enabled]
    choice = next((b for b in H200_ORDER_IN_FORCE if Backend(b) in enabled), None)
    records.append(
        Dispatch(config_id, Backend(choice) if choice else None, priority_order=H200_ORDER_IN_FORCE)
    )
    records += [kernel_capture(config_id, b) for b in enabled]
    for b in enabled:
        records += samples(config_id, b, count)
    return records


# ------------------------------------------------------------------ the fake engine
class FakeEngine:
    """The engine interface SdpaApp uses; records what the app asked for."""

    def __init__(self, trace_source: Backend = Backend.CUDNN) -> None:
        self.app: SdpaApp | None = None
        self.started = False
        self.stopped = False
        self.configs: list[Configure] = []
        self.paused: list[bool] = []
        self.sent: list[Any] = []
        self.captures: list[CaptureTraces] = []
        self.retries = 0
        self.switched_to: list[str] = []
        self.killed = 0
        self.alive = True  # send() answers False when not
        self.engine_pid: int | None = ENGINE_PID
        self.trace_source = trace_source

    # -- the interface ---------------------------------------------------------------------

    @property
    def engine_pids(self) -> frozenset[int]:
        return frozenset({self.engine_pid}) if self.engine_pid else frozenset()

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True

    def configure(self, config: Configure) -> None:
        self.configs.append(config)

    def set_paused(self, paused: bool) -> None:
        self.paused.append(paused)

    def retry(self) -> None:
        self.retries += 1

    def switch_device(self, device: str) -> None:
        self.switched_to.append(device)

    def kill_engine(self) -> None:
        self.killed += 1

    def send(self, record: Any) -> bool:
        self.sent.append(record)
        if not self.alive:
            return False
        if isinstance(record, CaptureTraces):
            self.captures.append(record)
            self._capture(record)
        return True

    # -- helpers for tests ----------------------------------------------------------------
    @property
    def config(self) -> Configure:
        """The latest configuration the app sent."""
        return self.configs[-1]

    def feed(self, app: SdpaApp, records: list[Any]) -> None:
        """Post records to the app as the supervisor's reader thread does."""
        app.post_message(EngineRecords(list(records)))

    def event(self, app: SdpaApp, event: Any) -> None:
        app.post_message(EngineEvent(event))

    def feed_live(self, app: SdpaApp, count: int = 8) -> None:
        """Ready (once) plus a full set of records for the current configuration."""
        records: list[Any] = [] if app.session.environment else [Ready(H200)]
        records += live_records(self.config.config_id, self.config.enabled, count)
        self.feed(app, records)

    def _capture(self, request: CaptureTraces) -> None:
        """Write one small real trace file, then answer as the engine does."""
        directory = Path(request.directory)
        target = directory / f"trace-{self.trace_source.value}.json"
        try:
            shutil.copyfile(TRACE_FIXTURES[self.trace_source], target)
            answer = TracesCaptured(request.request_id, (str(target),))
        except OSError as exc:
            answer = TracesCaptured(request.request_id, (), error=str(exc))
        if self.app is not None:
            self.feed(self.app, [answer])


# ------------------------------------------------------------------ the fake NVML poller
def h200_gpu(**changes: Any) -> GpuSnapshot:
    """A plausible H200 reading while the engine measures (only our engine on the GPU)."""
    values: dict[str, Any] = dict(
        index=0,
        name="NVIDIA H200",
        driver_version="580.95.05",
        uuid="GPU-5c3e2a9d-0000-4f5e-9b61-1a2b3c4d5e6f",
        utilization_gpu_pct=97,
        utilization_mem_pct=41,
        memory_used_bytes=3_410_000_000,
        memory_total_bytes=150_109_880_320,
        sm_clock_mhz=1980,
        mem_clock_mhz=3201,
        sm_clock_max_mhz=1980,
        power_w=312.4,
        power_limit_w=700.0,
        temperature_c=41,
        clock_event_reasons=("none",),
        processes=(GpuProcess(ENGINE_PID, 3_072 * 2**20, "python"),),
        own_pids=frozenset({ENGINE_PID}),
        time=T0,
    )
    values.update(changes)
    return GpuSnapshot(**values)


def h200_power_not_supported() -> GpuSnapshot:
    return h200_gpu(power_w=None, errors={"power_w": "Not Supported"})


def h200_processes_not_supported() -> GpuSnapshot:
    return h200_gpu(processes=None, errors={"processes": "Not Supported"})


def h200_throttled() -> GpuSnapshot:
    return h200_gpu(clock_event_reasons=("SW power cap",), sm_clock_mhz=1755, power_w=699.0)


def h200_shared() -> GpuSnapshot:
    return h200_gpu(
        processes=(
            GpuProcess(ENGINE_PID, 3_072 * 2**20, "python"),
            GpuProcess(31337, 40 * 2**30, "train.py"),
        ),
        memory_used_bytes=46_400_000_000,
    )


class FakeGpuSource:
    """``gpu_source`` for SdpaApp: delivers ``first`` at once; ``push`` delivers more later."""

    def __init__(self, first: GpuSnapshot | None = None) -> None:
        self.first = first if first is not None else h200_gpu()
        self.deliver: Callable[[GpuSnapshot], None] | None = None
        self.readings = 0
        self.stopped = False

    def __call__(self, deliver: Callable[[GpuSnapshot], None]) -> "FakeGpuSource":
        self.deliver = deliver
        deliver(self.first)
        return self

    def push(self, snapshot: GpuSnapshot) -> None:
        """Deliver a later reading; like the real poller's, each one is stamped with a new time."""
        assert self.deliver is not None, "the app has not started the GPU source"
        self.readings += 1
        self.deliver(replace(snapshot, time=self.first.time + self.readings))

    def stop(self) -> None:
        self.stopped = True


# ------------------------------------------------------------------ building and reading the app
def make_test_app(
    export_dir: str | Path = "sdpa-tui-exports",
    workload: Workload | None = None,
    enabled: tuple[Backend, ...] = ALL_BACKENDS,
    gpu: GpuSnapshot | None = None,
) -> tuple[SdpaApp, FakeEngine, FakeGpuSource]:
    engine = FakeEngine()
    source = FakeGpuSource(gpu)
    app = SdpaApp(Session(workload or Workload(), enabled), engine, source, export_dir=str(export_dir))
    engine.app = app
    return app, engine, source


def screen_lines(app: SdpaApp) -> list:
    """The screen as the terminal shows it now: one :class:`Strip` per row."""
    return screen_strips(app.screen)


def screen_text(app: SdpaApp) -> str:
    """The whole visible screen as plain text."""
    return "\n".join(strip.text for strip in screen_lines(app))


def widget_text(app: SdpaApp, selector: str) -> str:
    """The screen cells covered by the widget matching ``selector`` (border included), as text."""
    region = app.screen.query_one(selector).region
    rows = screen_lines(app)[region.y : region.bottom]
    return "\n".join(strip.crop(region.x, region.right).text for strip in rows)


async def settle(pilot: Pilot, until: Callable[[], bool] | None = None, timeout: float = 3.0) -> None:
    """Let messages be handled and the panels' redraw run (until ``until()`` holds, if given)."""
    await pilot.pause()
    waited = 0.0
    while True:
        await pilot.pause(0.05)
        waited += 0.05
        if until is None:
            # a little while, and no redraw of the panels due
            redraws = getattr(pilot.app, "redraws", None)
            if waited >= 0.3 and not (redraws is not None and redraws.pending):
                return
        elif until():
            return
        if waited >= timeout:
            return


class FakeDeviceEngines(FakeEngine):
    """The engine interface of :class:`DeviceEngines`: configured once for every GPU."""

    def __init__(self, devices: tuple[int, ...]) -> None:
        super().__init__()
        self.devices = devices
        self.shown = devices[0]
        self.cuda_devices = {i: f"cuda:{i}" for i in devices}

    def switch_device(self, device: str) -> None:
        super().switch_device(device)
        self.shown = next(i for i, cuda in self.cuda_devices.items() if cuda == device)

    @property
    def engine_pids(self) -> frozenset[int]:
        return frozenset(ENGINE_PID + i for i in self.devices)

    def feed_gpu(self, app, index: int, slower: float = 1.0) -> None:
        """A full set of records from GPU ``index``'s engine; its times ``slower`` times the H100's."""
        records = [Ready(H200)] + [replace(r, gpu_us=r.gpu_us * slower, eager_us=r.eager_us * slower)
                                   if isinstance(r, Sample) else r
                                   for r in live_records(self.config.config_id, self.config.enabled)]
        app.post_message(DeviceRecords(index, records))
