"""The live monitor: a Textual app over an engine process and an NVML poller.

Background threads never touch widgets: they post typed messages (:mod:`.messages`); the handlers apply records to
the :class:`Session` (through :class:`~.lab.engine_news.EngineNews`) and set the app's reactives; ``watch_*`` methods
redraw the widgets that depend on each. The panels read the session at most once a second while samples stream in
(:class:`~.lab.redraw_throttle.RedrawThrottle`), at once for a backend's first number after a key.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Grid, Horizontal
from textual.css.query import NoMatches
from textual.reactive import var
from textual.screen import Screen
from textual.widgets import Footer, Static

from ..core.backends import ALL_BACKENDS, Backend
from ..core.lab.lab_controller import Change, LabController
from ..core.lab.report_model import ReportModel
from ..core.lab.session import Session
from ..core.protocol.engine_commands import CaptureTraces
from ..core.protocol.engine_handle import EngineHandle
from ..core.sweep.series_measurer import SeriesMeasurer
from ..core.workload import Workload
from ..telemetry.gpu_snapshot import GpuSnapshot
from ..telemetry.host_cpu import disturbance_note
from ..telemetry.host_gpus import HostGpus
from .lab.engine_news import ENGINE_STARTING, EngineNews, News
from .lab.gpu_readings import GpuSource, Stoppable
from .lab.lab_gpus import LabGpus, Switched
from .lab.redraw_throttle import RedrawThrottle
from .lab.snapshot_requests import SnapshotFlow
from .messages import DeviceEvent, DeviceRecords, EngineEvent, EngineRecords, GpuUpdate, HostGpusUpdate
from .screens.gpu_chooser import GpuChooser
from .screens.workload_form import WorkloadForm
from .widgets.backend_panel import BackendPanel
from .widgets.dispatch_panel import DispatchPanel
from .widgets.gpu_overview import GpuOverview
from .widgets.gpu_panel import GpuPanel
from .widgets.header import EnvironmentHeader
from .widgets.status_line import StatusLine

MIN_SIZE = (60, 16)
"""Below this the panels cannot be read: a notice says so instead."""
COMPACT_BELOW_ROWS = 36
"""Shorter terminals get one-line clocks, so each panel still names its kernel."""
REDRAW_INTERVAL_S = 1.0
"""While samples stream in, the panels are redrawn at most once a second, as GPU monitors do: the redraws were
most of the UI process's CPU time. Each backend's first number after a key is drawn at once."""
TABLE_REDRAW_S = 0.5
"""``--devices``: the side-by-side table is redrawn at most this often (records come from every engine)."""
HOST_PRESSURE_EVERY_S = 2.0
"""How often the host's CPU pressure is read for the header (one small /proc read)."""


class MainScreen(Screen):
    """The app's own screen; it tells the app its size (the app's own Resize is consumed by Textual)."""

    def on_resize(self, event: events.Resize) -> None:
        self.app.fit_to(event.size.width, event.size.height)  # type: ignore[attr-defined]


class SdpaApp(App):
    """``engine`` and ``gpu_source`` are injected so tests can drive the app without a GPU.

    The app composes: the :class:`LabController` (what is measured: flags, workload, priority, pause, every GPU's
    session), :class:`EngineNews` (the engine's records and events, worded), :class:`LabGpus` (which GPU is shown),
    :class:`SnapshotFlow` (snapshots and traces). Subclasses add what runs beside the lab through
    :meth:`lab_started` and :meth:`lab_stopping`."""

    CSS_PATH = Path(__file__).with_name("app.tcss")
    """The lab's stylesheet beside this file, for the subclasses too (``ui/watch/watch_app.py``'s): Textual reads a
    relative path from the folder of the running app's own class."""
    TITLE = "sdpa-tui"
    BINDINGS = [
        # "?" first: where the footer is cut (80 columns), the way to every other key still shows
        Binding("question_mark", "help", "Help", key_display="?"),
        # each panel's title names its toggle ("Flash (f)"): the footer keeps its width for the rest, q Quit on 80 columns
        Binding("f", "toggle('FLASH_ATTENTION')", "Flash", tooltip="toggle the Flash backend flag", show=False),
        Binding("e", "toggle('EFFICIENT_ATTENTION')", "MemEff", tooltip="toggle the mem-efficient backend flag", show=False),
        Binding("c", "toggle('CUDNN_ATTENTION')", "cuDNN", tooltip="toggle the cuDNN backend flag", show=False),
        Binding("m", "toggle('MATH')", "Math", tooltip="toggle the Math backend flag", show=False),
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

    gpu: var[GpuSnapshot | None] = var(None, init=False)
    """The watched GPU's latest NVML reading (the GPU panel)."""
    host_gpus: var[HostGpus | None] = var(None, init=False)
    """Every GPU's latest NVML reading (the overview, ``g``)."""
    engine_state: var[str] = var(ENGINE_STARTING, init=False)
    """The header's engine line: starting, restarting, died; '' while it measures."""
    paused: var[bool] = var(False, init=False)
    """Measuring is paused (``space``); the controller's ``paused``, as the header shows it."""
    host_disturbance: var[str] = var("", init=False)
    """Why the host's CPUs make the numbers read high now, or ''."""
    compact: var[bool] = var(False, init=False)
    """One-line clocks: the terminal is shorter than ``COMPACT_BELOW_ROWS``."""
    report: var[ReportModel | None] = var(None, init=False, always_update=True)
    """The shown session as the panels last read it (one reading for every panel); set by the redraw throttle."""

    def __init__(
        self,
        session: Session,
        engine: EngineHandle,
        gpu_source: GpuSource | None = None,
        export_dir: str = "sdpa-tui-exports",
        device: str = "auto",
        controller: LabController | None = None,
        measure_series: SeriesMeasurer | None = None,
    ) -> None:
        super().__init__()
        self.controller = controller or LabController(session)  # flags, priority, legacy, pause, sessions per GPU
        self.engine = engine
        self.gpu_source = gpu_source
        self.measure_series = measure_series
        """What the sweep view measures with (``v``); None: the sweep is not offered."""
        self.export_dir = export_dir
        self.lab_gpus = LabGpus(engine, self.controller, device)
        self.engine_news = EngineNews(lambda: self.controller.session)
        self.snapshots = SnapshotFlow(self)
        self.redraws = RedrawThrottle(self, REDRAW_INTERVAL_S, lambda: self.while_open(self.read_session))
        """The panels' redraws: ``pending`` while one is due."""
        self.table_redraws = RedrawThrottle(self, TABLE_REDRAW_S, lambda: self.while_open(self.show_gpus))
        """``--devices``: the side-by-side table's redraws."""
        self.host_pressure: float | None = None  # % of the last 10 s some task waited for a CPU
        self.host_pressure_source: Callable[[], float | None] | None = None  # make_app: the kernel's PSI
        self._poller: Stoppable | None = None
        self._request_id = 0

    @property
    def session(self) -> Session:
        """The shown GPU's session (the controller holds every GPU's)."""
        return self.controller.session

    # -- layout and lifecycle --------------------------------------------------------------
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
        yield StatusLine(id="status-line")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.engine.start()
        self.engine.configure(self.controller.configure_record())
        if self.gpu_source is not None:
            self._poller = self.gpu_source(self.post_gpu_reading)
        if self.host_pressure_source is not None:
            self.set_interval(HOST_PRESSURE_EVERY_S, self.read_host_pressure)
        self.status("engine starting: the first numbers follow once torch is imported")
        self.read_session()
        self.lab_started()

    def post_gpu_reading(self, snapshot: GpuSnapshot) -> None:
        """The GPU source's callback, from its thread."""
        self.post_message(GpuUpdate(snapshot))

    def on_unmount(self) -> None:
        self.lab_stopping()
        if self._poller is not None:
            self._poller.stop()
        self.engine.stop()

    def lab_started(self) -> None:
        """Hook: the lab is on screen and its engine started; start what runs beside it."""

    def lab_stopping(self) -> None:
        """Hook: the app is closing; stop what runs beside the lab (its engine stops next)."""

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
        self.compact = height < COMPACT_BELOW_ROWS

    def while_open(self, redraw: Callable[[], None]) -> None:
        """Run a redraw unless the app is closing: a timer or a late message may come after its screens went."""
        if not self.screen_stack:
            return
        try:
            redraw()
        except NoMatches:  # the screen is still there but its widgets are already gone
            pass

    # -- what background threads post ------------------------------------------------------
    def on_engine_records(self, message: EngineRecords) -> None:
        self.show_news(self.engine_news.records(message.records))

    def on_engine_event(self, message: EngineEvent) -> None:
        self.show_news(self.engine_news.event(message.event))

    def show_news(self, news: News) -> None:
        if news.engine_state is not None:
            self.engine_state = news.engine_state
        for line in news.statuses:
            self.status(line.text, error=line.error)
        for answer in news.traces:
            self.snapshots.traces_captured(answer)
        if news.first_numbers:
            self.redraws.now()  # a backend's first number after a key or at start: now, and again once laid out
        elif news.session_changed:
            self.redraws.request()

    def on_gpu_update(self, message: GpuUpdate) -> None:
        self.gpu = message.snapshot
        flags = [name for name, on in (("throttled", message.snapshot.throttled),
                                       ("shared", bool(message.snapshot.other_processes))) if on]
        self.session.gpu_conditions = tuple(flags)

    def on_host_gpus_update(self, message: HostGpusUpdate) -> None:
        self.host_gpus = message.host

    def on_device_records(self, message: DeviceRecords) -> None:
        """``--devices``: the shown GPU's records go to the panels, every GPU's to its session and the table."""
        if message.index == self.lab_gpus.watched_gpu:
            self.show_news(self.engine_news.records(message.records))
        else:
            session = self.controller.session_of(message.index)
            for record in message.records:
                session.apply(record)
        self.table_redraws.request()

    def on_device_event(self, message: DeviceEvent) -> None:
        if message.index == self.lab_gpus.watched_gpu:
            self.show_news(self.engine_news.event(message.event))

    def read_host_pressure(self) -> None:
        assert self.host_pressure_source is not None
        self.host_pressure = self.host_pressure_source()
        self.host_disturbance = disturbance_note(self.host_pressure)
        self.session.cpu_contended = bool(self.host_disturbance)  # recorded beside each sample in history.csv

    # -- drawing: each reactive's watcher redraws what shows it ----------------------------
    def read_session(self) -> None:
        """Read the shown session once for every panel (the redraw throttle calls this)."""
        self.report = ReportModel.of(self.session)

    def watch_report(self, model: ReportModel) -> None:
        self.while_open(lambda: self.draw_panels(model))

    def draw_panels(self, model: ReportModel) -> None:
        self.show_header()
        cpu = self.on_cpu
        pick = self.session.dispatch.choice if self.session.dispatch else None
        rows = {row.backend: row for row in model.rows}
        for panel in self.main_screen.query(BackendPanel):
            panel.show(self.session, rows[panel.backend], panel.backend == pick, cpu, self.compact)
        self.main_screen.query_one(DispatchPanel).show(model)
        self.show_gpu_panel()

    @property
    def on_cpu(self) -> bool:
        env = self.session.environment
        return bool(env and env.is_cpu)

    def show_header(self) -> None:
        env = self.session.environment
        self.main_screen.query_one(EnvironmentHeader).show(
            env, self.session.workload, self.engine_state, self.paused,
            disturbance_note(self.host_pressure, self.on_cpu or env is None))

    def show_gpu_panel(self) -> None:
        self.main_screen.query_one(GpuPanel).show(self.gpu, self.on_cpu, self.session.engine_busy.share())

    def watch_engine_state(self) -> None:
        self.while_open(self.show_header)

    def watch_paused(self) -> None:
        self.while_open(self.show_header)

    def watch_host_disturbance(self) -> None:
        self.while_open(self.show_header)

    def watch_gpu(self) -> None:
        self.while_open(self.show_gpu_panel)

    def watch_host_gpus(self) -> None:
        self.while_open(self.show_gpus)  # the poller's thread posts readings until it stops: one may come late

    def watch_compact(self, compact: bool) -> None:
        self.main_screen.set_class(compact, "-compact")
        self.redraws.request()

    def show_gpus(self) -> None:
        """The overview of every GPU (with ``--devices``, each one's numbers side by side)."""
        self.main_screen.query_one(GpuOverview).show(self.host_gpus, self.lab_gpus.watched_gpu,
                                                     self.lab_gpus.measuring_gpus, self.lab_gpus.results())

    def status(self, text: str, error: bool = False) -> None:
        self.main_screen.query_one(StatusLine).say(text, error)

    # -- the keys that change what is measured: the controller decides, the engine is told --------------
    def apply(self, change: Change | None) -> None:
        """Send what a key changed to the engine and say it on the status line."""
        if change is None:
            return
        if change.configure is not None:
            self.engine.configure(change.configure)
            self.redraws.request()
        self.status(change.message, error=change.error)

    def action_toggle(self, backend_name: str) -> None:
        self.apply(self.controller.toggle(Backend(backend_name)))

    def action_toggle_legacy(self) -> None:
        self.apply(self.controller.toggle_legacy())

    def action_rotate_priority(self) -> None:
        self.apply(self.controller.rotate_priority())

    def set_workload(self, workload: Workload) -> None:
        self.apply(self.controller.set_workload(workload))

    def action_scale_seq(self, factor: float) -> None:
        self.apply(self.controller.scale_seq(factor))

    def action_cycle_dtype(self) -> None:
        self.apply(self.controller.cycle_dtype())

    def action_toggle_causal(self) -> None:
        self.apply(self.controller.toggle_causal())

    def action_toggle_direction(self) -> None:
        self.apply(self.controller.toggle_direction())

    def action_edit_workload(self) -> None:
        def done(workload: Workload | None) -> None:
            if workload is not None:
                self.set_workload(workload)

        self.push_screen(WorkloadForm(self.session.workload), done)

    def action_pause(self) -> None:
        self.paused = self.controller.toggle_pause()
        self.engine.set_paused(self.paused)
        left_alone = "the CPU" if self.on_cpu else "the GPU"
        self.status(f"paused: {left_alone} is left alone" if self.paused else "measuring again")

    # -- GPUs ------------------------------------------------------------------------------
    def action_choose_gpu(self) -> None:
        host = self.host_gpus
        if host is None or host.count == 0:
            why = host.reason if host else "NVML has not answered yet"
            self.status(f"no GPU to choose: {why}", error=True)
            return
        self.push_screen(GpuChooser(host, self.lab_gpus.watched_gpu, self.lab_gpus.measuring_gpus,
                                    self.lab_gpus.hidden_gpus(host)), self.switch_gpu)

    def switch_gpu(self, index: int | None) -> None:
        """Show NVML GPU ``index`` from now on (the chooser's answer); the current GPU's session is kept."""
        if index is None:
            return
        switched = self.lab_gpus.switch(index)
        if switched is None:
            return
        if not isinstance(switched, Switched):
            self.status(switched.text, error=switched.error)
            return
        self.gpu = self.host_gpus.get(index) if self.host_gpus else None
        self.engine_state = switched.engine_state
        if switched.reconfigure:
            self.engine.configure(self.controller.configure_record())
        self.status(switched.status.text)
        self.redraws.request()
        self.show_gpus()

    # -- snapshots, traces, the sweep, the engine ------------------------------------------
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
        if self.measure_series is None:
            self.status("no sweep here: use sdpa-tui sweep", error=True)
            return
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

        self.push_screen(SweepScreen(self.session.workload, self.session.enabled, self.lab_gpus.device, env.is_cpu,
                                     self.measure_series), done)

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
