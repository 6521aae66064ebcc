"""The live monitor: a Textual app over an engine process and an NVML poller.

Background threads never touch widgets: they post messages; handlers update the
:class:`Session`; a 4 Hz timer redraws what changed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Grid, Horizontal
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, Static

from ..core.backends import ALL_BACKENDS
from ..core.lab.lab_controller import LabController
from ..core.lab.report_model import ReportModel
from ..core.lab.session import Session
from ..core.protocol.engine_commands import CaptureTraces
from ..core.protocol.engine_handle import EngineHandle
from ..telemetry.gpu_snapshot import GpuSnapshot
from ..telemetry.host_cpu import disturbance_note
from .background_input import BackgroundInput
from .configuration_keys import ConfigurationKeys
from .gpu_switching import GpuSwitching
from .messages import GpuUpdate
from .snapshot_requests import SnapshotFlow
from .widgets.backend_panel import BackendPanel
from .widgets.dispatch_panel import DispatchPanel
from .widgets.gpu_overview import GpuOverview
from .widgets.gpu_panel import GpuPanel
from .widgets.header import EnvironmentHeader

MIN_SIZE = (60, 16)
"""Below this the panels cannot be read: a notice says so instead."""
COMPACT_BELOW_ROWS = 36
"""Shorter terminals get one-line clocks, so each panel still names its kernel."""
REDRAW_INTERVAL_S = 1.0
"""Between keys the screen is redrawn at most once a second, as GPU monitors do: the redraws were
most of the UI process's CPU time. Each backend's first number after a key is drawn at once."""
HOST_PRESSURE_EVERY_S = 2.0
"""How often the host's CPU pressure is read for the header (one small /proc read)."""


class MainScreen(Screen):
    """The app's own screen; it tells the app its size (the app's own Resize is consumed by Textual)."""

    def on_resize(self, event: events.Resize) -> None:
        self.app.fit_to(event.size.width, event.size.height)


class SdpaApp(GpuSwitching, BackgroundInput, ConfigurationKeys, App):
    """``engine`` and ``gpu_source`` are injected so tests can drive the app without a GPU.

    The mixins hold the GPU overview and ``g`` (:class:`GpuSwitching`), the handlers of what
    background threads post (:class:`BackgroundInput`) and the keys that change what is measured
    (:class:`ConfigurationKeys`)."""

    CSS_PATH = "app.tcss"
    TITLE = "sdpa-tui"
    BINDINGS = [
        # "?" first: where the footer is cut (80 columns), the way to every other key still shows
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("f", "toggle('FLASH_ATTENTION')", "Flash", tooltip="toggle the Flash backend flag"),
        Binding("e", "toggle('EFFICIENT_ATTENTION')", "MemEff", tooltip="toggle the mem-efficient backend flag"),
        Binding("c", "toggle('CUDNN_ATTENTION')", "cuDNN", tooltip="toggle the cuDNN backend flag"),
        Binding("m", "toggle('MATH')", "Math", tooltip="toggle the Math backend flag"),
        Binding("space", "pause", "Pause", tooltip="pause or resume measuring (the device is left alone)"),
        Binding("w", "edit_workload", "Workload", tooltip="edit the workload (batch, heads, lengths, head dim, dtype, mask, direction)"),
        Binding("plus,equals_sign", "scale_seq(2)", "Seq×2", key_display="+", tooltip="double the sequence length", show=False),
        Binding("minus", "scale_seq(0.5)", "Seq÷2", key_display="-", tooltip="halve the sequence length", show=False),
        Binding("d", "cycle_dtype", "Dtype", tooltip="cycle the dtype: fp16, bf16, fp32", show=False),
        Binding("k", "toggle_causal", "Causal", tooltip="causal mask on or off", show=False),
        Binding("b", "toggle_direction", "Fwd/Bwd", tooltip="forward, or forward + backward", show=False),
        Binding("s", "snapshot", "Snapshot", tooltip="write a snapshot: JSON, Markdown table, history CSV, screen SVG, traces"),
        Binding("t", "trace", "Trace", tooltip="capture a Chrome trace per running backend (Perfetto opens them)", show=False),
        Binding("v", "sweep", "Sweep", tooltip="sweep the sequence length: time, memory, crossovers", show=False),
        Binding("l", "toggle_legacy", "Legacy API", tooltip="apply the flags as torch.backends.cuda.sdp_kernel does (no cuDNN switch)", show=False),
        Binding("p", "rotate_priority", "Priority", tooltip="rotate the dispatch priority order (sdpa_kernel set_priority=True)", show=False),
        Binding("g", "choose_gpu", "GPU", tooltip="choose the GPU to measure on (each keeps its history)", show=False),
        Binding("r", "restart_engine", "Restart", tooltip="retry the engine after it stopped retrying", show=False),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        session: Session,
        engine: EngineHandle | None,
        gpu_source: Callable[[Callable[[GpuSnapshot], None]], Any] | None = None,
        export_dir: str = "sdpa-tui-exports",
        device: str = "auto",
        controller: LabController | None = None,
    ) -> None:
        super().__init__()
        self.device = device
        self.controller = controller or LabController(session)  # flags, priority, legacy, pause, sessions per GPU
        self.engine: EngineHandle = engine  # type: ignore[assignment]  # None only until launch sets it
        self.gpu_source = gpu_source
        self.export_dir = export_dir
        self.gpu: GpuSnapshot | None = None
        self.engine_state = "engine starting (importing torch)…"
        self.snapshots = SnapshotFlow(self)
        self._poller: Any = None
        self._dirty = True
        self._request_id = 0
        self.host_pressure: float | None = None  # % of the last 10 s some task waited for a CPU
        self.host_pressure_source: Callable[[], float | None] | None = None  # make_app: the kernel's PSI

    @property
    def session(self) -> Session:
        """The shown GPU's session (the controller holds every GPU's)."""
        return self.controller.session

    @property
    def paused(self) -> bool:
        return self.controller.paused

    # -- layout ----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield EnvironmentHeader(id="header")
        with Grid(id="backends"):
            for backend in ALL_BACKENDS:
                yield BackendPanel(backend)
        with Horizontal(id="side"):
            yield DispatchPanel(id="dispatch")
            yield GpuPanel(id="gpu")
        yield GpuOverview(id="gpus")
        yield Static(id="too-small")
        yield Static(id="status-line")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.engine.start()
        self.engine.configure(self.controller.configure_record())
        if self.gpu_source is not None:
            self._poller = self.gpu_source(lambda snap: self.post_message(GpuUpdate(snap)))
        self.set_interval(REDRAW_INTERVAL_S, self._redraw_if_dirty)
        if self.host_pressure_source is not None:
            self.set_interval(HOST_PRESSURE_EVERY_S, self._read_host_pressure)
        self.status("engine starting: the first numbers follow once torch is imported")
        self._redraw()

    def get_default_screen(self) -> Screen:
        return MainScreen(id="_default")

    @property
    def main_screen(self) -> Screen:
        return self.screen_stack[0]

    def fit_to(self, width: int, height: int) -> None:
        """Choose the layout for a terminal of this size: a notice when too small, compact when short."""
        screen = self.main_screen
        screen.set_class(width < MIN_SIZE[0] or height < MIN_SIZE[1], "-tiny")
        screen.query_one("#too-small", Static).update(
            f"The terminal is {width}x{height}; sdpa-tui needs at least {MIN_SIZE[0]}x{MIN_SIZE[1]}.\n"
            "Make it larger (measuring goes on), or use: sdpa-tui report"
        )
        compact = height < COMPACT_BELOW_ROWS
        if compact != screen.has_class("-compact"):
            screen.set_class(compact, "-compact")
            self._dirty = True

    def on_unmount(self) -> None:
        if self._poller is not None:
            self._poller.stop()
        self.engine.stop()

    # -- drawing ---------------------------------------------------------------------------
    def _read_host_pressure(self) -> None:
        pressure = self.host_pressure_source()
        if disturbance_note(pressure) != disturbance_note(self.host_pressure):
            self._dirty = True
        self.host_pressure = pressure
        self.session.cpu_contended = bool(disturbance_note(pressure))  # recorded beside each sample in history.csv

    def _redraw_if_dirty(self) -> None:
        if self._dirty:
            self.while_open(self._redraw)

    def while_open(self, redraw: Callable[[], None]) -> None:
        """Run a timer's redraw unless the app is closing: a tick may come after its screens went."""
        if not self.screen_stack:
            return
        try:
            redraw()
        except NoMatches:  # the screen is still there but its widgets are already gone
            pass

    def _redraw(self) -> None:
        self._dirty = False
        env = self.session.environment
        cpu = bool(env and env.is_cpu)
        self.main_screen.query_one(EnvironmentHeader).show(env, self.session.workload, self.engine_state, self.paused,
                                                           disturbance_note(self.host_pressure, cpu or env is None))
        pick = self.session.dispatch.choice if self.session.dispatch else None
        model = ReportModel.of(self.session)  # one reading of the session for every panel of this drawing
        rows = {row.backend: row for row in model.rows}
        compact = self.main_screen.has_class("-compact")
        for panel in self.main_screen.query(BackendPanel):
            panel.show(self.session, rows[panel.backend], panel.backend == pick, cpu, compact)
        self.main_screen.query_one(DispatchPanel).show(model)
        self.main_screen.query_one(GpuPanel).show(self.gpu, cpu, self.session.engine_busy.share())

    def status(self, text: str, error: bool = False) -> None:
        line = self.main_screen.query_one("#status-line", Static)
        line.set_class(error, "-error")
        line.update(f"{time.strftime('%H:%M:%S')}  {text}")

    # -- actions (the flag, priority and workload keys are in ConfigurationKeys) -----------
    def action_pause(self) -> None:
        self.engine.set_paused(self.controller.toggle_pause())
        env = self.session.environment
        left_alone = "the CPU" if env is not None and env.is_cpu else "the GPU"
        self.status(f"paused: {left_alone} is left alone" if self.paused else "measuring again")
        self._dirty = True

    def action_snapshot(self) -> None:
        self.snapshots.start(self.export_dir)

    def action_trace(self) -> None:
        directory = os.path.join(self.export_dir, time.strftime("traces-%Y%m%d-%H%M%S"))
        try:
            os.makedirs(directory, exist_ok=False)
        except OSError as exc:
            self.status(f"cannot create {directory}: {exc.strerror}", error=True)
            return
        self.snapshots.expect_traces(self.next_request_id(), directory)

    def next_request_id(self) -> int:
        self._request_id += 1
        return self._request_id

    def send_capture(self, request_id: int, directory: str) -> bool:
        return self.engine.send(CaptureTraces(request_id, os.path.abspath(directory)))

    def action_restart_engine(self) -> None:
        if not self.engine_state.startswith(("engine died", "engine stopped")):
            self.status("the engine is running: nothing to retry (r restarts an engine that died)")
            return
        self.engine.retry()
        self.status("retrying the engine")

    def action_sweep(self) -> None:
        """Sweep the sequence length with the enabled backends; the live engine rests meanwhile."""
        env = self.session.environment
        if env is None:
            self.status("the engine is still starting: try the sweep in a moment", error=True)
            return
        was_paused = self.paused
        self.engine.set_paused(True)
        self.status("sweeping the sequence length; live measuring is paused")

        def done(_: None) -> None:
            self.engine.set_paused(was_paused)
            self.status("sweep closed; measuring again" if not was_paused else "sweep closed")

        from .screens.sweep import SweepScreen  # here, as the help: not on the way to the first frame

        self.push_screen(SweepScreen(self.session.workload, self.session.enabled, self.device, env.is_cpu), done)

    def action_help(self) -> None:
        from .screens.help import HelpScreen  # with Textual's Markdown: 82-94 ms of imports (VM)

        self.push_screen(HelpScreen(self.BINDINGS))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for binding in self.BINDINGS:
            if binding.action not in ("quit", "help"):
                yield SystemCommand(binding.description, f"key {binding.key_display or binding.key}",
                                    lambda action=binding.action: self.run_action(action))
        yield SystemCommand("Help", "keys and what the clocks mean", self.action_help)
