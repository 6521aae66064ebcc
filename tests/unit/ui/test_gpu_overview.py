"""The overview of every GPU and ``g``: NVML readings from a fake ``pynvml`` module (synthetic
8x H100 values), read by the real :class:`HostGpuReader` and posted as the poller does."""

from __future__ import annotations

import time
from dataclasses import replace
from types import SimpleNamespace

import pytest
from support import fake_pynvml
from support.ui_fakes import (
    ENGINE_PID,
    T0,
    FakeDeviceEngines,
    make_test_app,
    settle,
    widget_text,
)
from textual.widgets import OptionList

from sdpa_tui.core.backends import ALL_BACKENDS, Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.workload import Workload
from sdpa_tui.telemetry import device_choice
from sdpa_tui.telemetry.host_gpus import HostGpuReader, HostGpus
from sdpa_tui.ui.app import SdpaApp
from sdpa_tui.ui.messages import GpuUpdate, HostGpusUpdate
from sdpa_tui.ui.screens.gpu_chooser import GpuChooser
from sdpa_tui.ui.widgets import status_line


def host_reading(monkeypatch: pytest.MonkeyPatch, gpus=None, own_pids=(ENGINE_PID,)) -> HostGpus:
    fake_pynvml.install(monkeypatch, gpus if gpus is not None else fake_pynvml.eight_gpus((ENGINE_PID,)))
    monkeypatch.setattr(device_choice, "torch_cuda_version", lambda: "12.8")  # CUDA sees the fake GPUs
    with HostGpuReader() as reader:
        host = reader.snapshot(own_pids=own_pids)
    return replace(host, time=T0, read_s=0.0)


async def shown(pilot, app, host: HostGpus) -> str:
    """Post a reading as the app's host poller does: all GPUs, and the watched one to its panel."""
    app.post_message(HostGpusUpdate(host))
    app.post_message(GpuUpdate(host.get(app.lab_gpus.watched_gpu)))
    await settle(pilot, until=lambda: app.query_one("#gpus").display and "GPU" in widget_text(app, "#gpus"))
    return widget_text(app, "#gpus")


async def choose(pilot, app, *keys: str) -> None:
    """``g``, then ``keys`` in the chooser (ending with enter or escape)."""
    await pilot.press("g")
    await settle(pilot, until=lambda: isinstance(app.screen, GpuChooser))
    await pilot.press(*keys)


async def test_one_line_per_gpu_with_throttling_and_strangers(monkeypatch) -> None:
    host = host_reading(monkeypatch)
    app, engine, _ = make_test_app()
    async with app.run_test(size=(120, 40)) as pilot:
        text = await shown(pilot, app, host)
        lines = [line for line in text.splitlines() if "SM" in line]
        assert len(lines) == 8
        assert "▶*0 H100" in lines[0] and " 97% " in lines[0] and "ok" in lines[0]
        assert "power cap" in lines[3] and "1605/1980" in lines[3]
        assert "+1 proc" in lines[5]  # the trainer; our own engine on GPU 0 is not counted
        assert "thermal, HW thermal" in lines[7]
        assert "8 GPU(s) · 3 flagged" in text


async def test_overview_hidden_without_nvml(monkeypatch) -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_message(HostGpusUpdate(HostGpus((), "NVML Shared Library Not Found", T0)))
        await settle(pilot)
        assert not app.query_one("#gpus").display
        await pilot.press("g")
        await settle(pilot)
        assert not isinstance(app.screen, GpuChooser)
        assert "no GPU to choose: NVML Shared Library Not Found" in widget_text(app, "#status-line")


async def test_g_switches_the_gpu_and_keeps_each_gpus_history(monkeypatch) -> None:
    host = host_reading(monkeypatch)
    app, engine, _ = make_test_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await shown(pilot, app, host)
        engine.feed_live(app)
        await settle(pilot, until=lambda: app.session.backends[Backend.CUDNN].gpu.summary() is not None)
        first = app.session
        await choose(pilot, app, "down", "down", "enter")
        await settle(pilot, until=lambda: engine.switched_to)
        assert engine.switched_to == ["cuda:2"] and app.lab_gpus.device == "cuda:2"
        assert app.session is not first and app.session.backends[Backend.CUDNN].gpu.summary() is None
        assert engine.config.config_id > first.config_id  # records in flight for GPU 0 are ignored
        assert "measuring on GPU 2 now" in widget_text(app, "#status-line")
        await settle(pilot, until=lambda: "▶*2" in widget_text(app, "#gpus"))
        # GPU 2 measures
        engine.feed_live(app)
        await settle(pilot, until=lambda: app.session.backends[Backend.CUDNN].gpu.summary() is not None)
        on_two = app.session
        # back to GPU 0: its numbers are still there
        await choose(pilot, app, "up", "up", "enter")
        await settle(pilot, until=lambda: len(engine.switched_to) == 2)
        assert engine.switched_to == ["cuda:2", "cuda:0"]
        assert app.session is first and first.backends[Backend.CUDNN].gpu.summary() is not None
        assert app.controller.sessions_by_gpu[2] is on_two


async def test_g_follows_cuda_visible_devices(monkeypatch) -> None:
    """CUDA_VISIBLE_DEVICES=1,3: NVML's GPU 3 is cuda:1 for the engine; GPU 0 cannot be measured."""
    host = host_reading(monkeypatch)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,3")
    app, engine, _ = make_test_app()
    app.lab_gpus.device = "cuda:0"  # as the command line resolves --device auto
    async with app.run_test(size=(120, 40)) as pilot:
        await shown(pilot, app, host)
        assert app.lab_gpus.watched_gpu == 1  # cuda:0 is NVML's GPU 1
        await choose(pilot, app, "down", "enter")  # GPU 3: the hidden GPU 2 is passed over
        await settle(pilot, until=lambda: engine.switched_to)
        assert engine.switched_to == ["cuda:1"] and app.lab_gpus.watched_gpu == 3
        await pilot.press("g")
        await settle(pilot, until=lambda: isinstance(app.screen, GpuChooser))
        options = app.screen.query_one(OptionList)
        hidden = [options.get_option_at_index(i) for i in range(options.option_count)
                  if options.get_option_at_index(i).disabled]
        assert [o.id for o in hidden] == ["0", "2", "4", "5", "6", "7"]
        assert "hidden by CUDA_VISIBLE_DEVICES" in str(hidden[0].prompt)
        await pilot.press("escape")
        await settle(pilot, until=lambda: not isinstance(app.screen, GpuChooser))
        app.switch_gpu(0)  # not from the chooser (its line is disabled), yet refused all the same
        await settle(pilot, until=lambda: "hidden" in widget_text(app, "#status-line"))
        assert "GPU 0 is hidden by CUDA_VISIBLE_DEVICES=1,3 (visible: GPU 1, 3)" in widget_text(app, "#status-line")
        assert engine.switched_to == ["cuda:1"] and app.lab_gpus.watched_gpu == 3


async def test_escape_keeps_the_gpu(monkeypatch) -> None:
    host = host_reading(monkeypatch)
    app, engine, _ = make_test_app()
    before = app.lab_gpus.device
    async with app.run_test(size=(120, 40)) as pilot:
        await shown(pilot, app, host)
        await choose(pilot, app, "down", "escape")
        await settle(pilot, until=lambda: not isinstance(app.screen, GpuChooser))
        assert engine.switched_to == [] and app.lab_gpus.device == before


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    frozen = SimpleNamespace(**{name: getattr(time, name) for name in dir(time) if not name.startswith("_")})
    frozen.strftime = lambda fmt, *args: time.strftime(fmt, time.gmtime(1_790_857_026))
    monkeypatch.setattr(status_line, "time", frozen)


def test_eight_gpus_at_120x40(snap_compare, monkeypatch, frozen_clock) -> None:
    """SYNTHETIC NVML readings (fake pynvml, 8x H100) with the real H200 trace records."""
    host = host_reading(monkeypatch)
    app, engine, _ = make_test_app()

    async def run_before(pilot) -> None:
        await shown(pilot, app, host)
        engine.feed_live(app)
        await settle(pilot, until=lambda: "SDPA picks" in widget_text(app, "#dispatch"))
        await settle(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


# ------------------------------------------------------------------ --devices: one engine per GPU
def devices_app(devices: tuple[int, ...]):
    engine = FakeDeviceEngines(devices)
    app = SdpaApp(Session(Workload(), ALL_BACKENDS), engine, None)
    engine.app = app
    return app, engine


async def test_side_by_side_names_the_slow_gpu(monkeypatch) -> None:
    host = host_reading(monkeypatch, fake_pynvml.eight_gpus((ENGINE_PID, ENGINE_PID + 1, ENGINE_PID + 2)))
    app, engine = devices_app((0, 1, 2))
    async with app.run_test(size=(120, 40)) as pilot:
        await shown(pilot, app, host)
        engine.feed_gpu(app, 0)
        engine.feed_gpu(app, 1, slower=1.3)
        engine.feed_gpu(app, 2)
        await settle(pilot, until=lambda: "slow: GPU 1" in widget_text(app, "#gpus"))
        text = widget_text(app, "#gpus")
        rows = {line.split()[1].lstrip("▶"): line for line in text.splitlines()[2:5]}
        assert set(rows) == {"0", "1", "2"}
        assert "cuDNN" in rows["1"] and "1.30" in rows["1"] and "1.00" in rows["0"]
        assert "9.7 µs" in rows["0"] and "12.6 µs" in rows["1"]
        # the panels show GPU 0; g shows GPU 1's numbers at once, nothing restarts
        await choose(pilot, app, "down", "enter")
        await settle(pilot, until=lambda: app.lab_gpus.device == "cuda:1")
        assert engine.shown == 1 and engine.configs[-1].config_id == app.session.config_id
        assert app.session.backends[Backend.CUDNN].gpu.summary().median == pytest.approx(9.7 * 1.3)
        assert "every GPU keeps measuring" in widget_text(app, "#status-line")


async def test_a_flag_change_reaches_every_gpu(monkeypatch) -> None:
    host = host_reading(monkeypatch)
    app, engine = devices_app((0, 1))
    async with app.run_test(size=(120, 40)) as pilot:
        await shown(pilot, app, host)
        engine.feed_gpu(app, 0)
        engine.feed_gpu(app, 1)
        await settle(pilot, until=lambda: "no outlier" in widget_text(app, "#gpus"))
        await pilot.press("c")  # cuDNN off: one Configure for both engines
        await settle(pilot, until=lambda: Backend.CUDNN not in engine.config.enabled)
        engine.feed_gpu(app, 1)
        await settle(pilot, until=lambda: 1 in app.controller.sessions_by_gpu
                     and app.controller.sessions_by_gpu[1].dispatch is not None
                     and app.controller.sessions_by_gpu[1].dispatch.choice is Backend.FLASH)
        assert app.controller.sessions_by_gpu[1].config_id == app.session.config_id
        assert Backend.CUDNN not in app.controller.sessions_by_gpu[1].enabled


def test_eight_gpus_side_by_side_at_120x40(snap_compare, monkeypatch, frozen_clock) -> None:
    """SYNTHETIC: fake NVML readings (8x H100) and the real H200 trace records on every GPU,
    GPU 3's times made 1.25x slower (it is the one power-capped in the fake readings)."""
    devices = tuple(range(8))
    pids = tuple(ENGINE_PID + i for i in devices)
    host = host_reading(monkeypatch, fake_pynvml.eight_gpus(pids), own_pids=pids)
    app, engine = devices_app(devices)

    async def run_before(pilot) -> None:
        await shown(pilot, app, host)
        for i in devices:
            engine.feed_gpu(app, i, slower=1.25 if i == 3 else 1.0)
        await settle(pilot, until=lambda: "slow: GPU 3" in widget_text(app, "#gpus")
                     and "SDPA picks" in widget_text(app, "#dispatch"))
        await settle(pilot)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


async def test_a_table_redraw_due_after_quitting_does_nothing(monkeypatch) -> None:
    """The side-by-side table's redraw timer can fire while the app closes (CI caught it once):
    the screens are gone by then, and the tick must not raise into the user's terminal."""
    host = host_reading(monkeypatch)
    app, engine = devices_app((0, 1))
    async with app.run_test(size=(120, 40)) as pilot:
        await shown(pilot, app, host)
        engine.feed_gpu(app, 1)
        await settle(pilot, until=lambda: app.table_redraws.pending)
    assert not app.screen_stack
    app.table_redraws.fire()
    app.redraws.fire()
    assert not app.table_redraws.pending


async def test_an_nvml_reading_that_arrives_while_quitting_does_nothing(monkeypatch) -> None:
    """The NVML poller posts a reading once a second from its own thread; one handled after the screens or their
    widgets went (a soak under tracemalloc hit it: NoMatches for GpuOverview) must not raise into the terminal."""
    host = host_reading(monkeypatch)
    app, _engine, _source = make_test_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await shown(pilot, app, host)
        for overview in app.query("GpuOverview"):
            await overview.remove()
        app.on_host_gpus_update(HostGpusUpdate(host))  # the widgets are gone, the screen is still there
    assert not app.screen_stack
    app.on_host_gpus_update(HostGpusUpdate(host))  # the screens are gone too
