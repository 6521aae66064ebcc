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

from ..core.backends import ALL_BACKENDS, Backend
from ..core.engine_commands import ENGINE_MEMORY_MIB, CaptureTraces, Configure
from ..core.records import Ready, Sample, TracesCaptured
from ..core.session import Session
from ..core.workload import DTYPES, Workload, WorkloadError
from ..engine.supervisor import EngineDied, EngineRecycled, EngineStarting
from ..telemetry.host_cpu import disturbance_note
from ..telemetry.snapshot import GpuSnapshot
from .gpu_switching import GpuSwitching
from .messages import EngineEvent, EngineRecords, GpuUpdate
from .screens.help import HelpScreen
from .screens.sweep import SweepScreen
from .screens.workload_form import WorkloadForm
from .snapshots import SnapshotFlow
from .widgets.backend_panel import BackendPanel
from .widgets.dispatch_panel import DispatchPanel
from .widgets.gpu_overview import GpuOverview
from .widgets.gpu_panel import GpuPanel
from .widgets.header import EnvironmentHeader

SAMPLE_INTERVAL_S = 0.25
"""Each enabled backend is sampled about four times a second while live."""
PROFILE_EVERY_S = 5.0
PROFILE_EVERY_MAX_S = 60.0
"""A kernel burst per backend 5 s after the first, then 10, 20, 40 and every 60 s while the
workload stays the same: its kernels do not change, and fewer profiler sessions are cheaper."""
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


class SdpaApp(GpuSwitching, App):
    """``engine`` and ``gpu_source`` are injected so tests can drive the app without a GPU."""

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
        engine: Any,
        gpu_source: Callable[[Callable[[GpuSnapshot], None]], Any] | None = None,
        export_dir: str = "sdpa-tui-exports",
        device: str = "auto",
    ) -> None:
        super().__init__()
        self.device = device
        self.session = session
        self.engine = engine
        self.gpu_source = gpu_source
        self.export_dir = export_dir
        self.gpu: GpuSnapshot | None = None
        self.paused = False
        self.engine_state = "engine starting (importing torch)…"
        self.snapshots = SnapshotFlow(self)
        self.flags: set[Backend] = set(session.enabled)  # what the user switched on
        self.priority: tuple[Backend, ...] = ()  # a custom dispatch order; () is torch's
        self.recycle_growth_mib = ENGINE_MEMORY_MIB  # replace the engine once it grew this much
        self._replacing_engine: float | None = None  # MiB the engine being replaced had grown
        self._poller: Any = None
        self._dirty = True
        self._request_id = 0
        self._last_error = ""
        self.host_pressure: float | None = None  # % of the last 10 s some task waited for a CPU
        self.host_pressure_source: Callable[[], float | None] | None = None  # make_app: the kernel's PSI
        self._numbered: tuple[int, set[Backend]] = (-1, set())  # a configuration, backends drawn at once

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
        self.engine.configure(self._configure_record())
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

    # -- background input ------------------------------------------------------------------
    def on_engine_records(self, message: EngineRecords) -> None:
        for record in message.records:
            if self.session.apply(record):
                self._dirty = True
            if isinstance(record, Ready):
                self.engine_state = ""
                mode = "the CPU" if record.environment.is_cpu else record.environment.device_name
                if self._replacing_engine is None:
                    self.status(f"engine ready on {mode}")
                else:
                    self.status(f"fresh engine ready on {mode}: the last one had grown {self._replacing_engine:,.0f} MiB "
                                "of host memory (history kept)")
                self._replacing_engine = None
            elif isinstance(record, TracesCaptured):
                self.snapshots.traces_captured(record)
        if self._first_numbers_of_configuration(message.records):
            self._redraw()  # a backend's first number after a key or at start: now, not at the next tick
            self._dirty = True  # and again at the tick, once the layout has settled (cheap: unchanged parts skip)
        errors = list(self.session.errors)  # kept in the session: snapshots export them
        if errors and errors[-1] != self._last_error:
            self._last_error = errors[-1]
            self.status(errors[-1], error=True)

    def _first_numbers_of_configuration(self, records: list[Any]) -> bool:
        """Whether ``records`` bring some backend's first number of the current configuration."""
        current = self.session.config_id
        if self._numbered[0] != current:
            self._numbered = (current, set())
        drawn = self._numbered[1]
        fresh = {r.backend for r in records if isinstance(r, Sample) and r.config_id == current} - drawn
        drawn |= fresh
        return bool(fresh)

    def on_engine_event(self, message: EngineEvent) -> None:
        event = message.event
        if isinstance(event, EngineStarting) and event.attempt > 1:
            self.engine_state = f"restarting the engine (attempt {event.attempt})"
        elif isinstance(event, EngineRecycled):
            self._replacing_engine = event.growth_mib
            self.engine_state = "restarting the engine to give host memory back"
            self.status(f"the engine's host memory grew {event.growth_mib:,.0f} MiB beyond its first uses "
                        "(torch keeps it for good); restarting it, history kept")
        elif isinstance(event, EngineDied):
            if event.retry_in_s is None:
                self.engine_state = "engine stopped: it died repeatedly on this workload"
                self.status(f"engine died again ({event.message}); not retrying: change the workload or press r", error=True)
            else:
                self.engine_state = f"engine died; restarting in {event.retry_in_s:.0f} s"
                self.status(f"engine died: {event.message}; history kept, restarting", error=True)
        self._dirty = True

    def on_gpu_update(self, message: GpuUpdate) -> None:
        self.gpu = message.snapshot
        flags = [name for name, on in (("throttled", message.snapshot.throttled),
                                       ("shared", bool(message.snapshot.other_processes))) if on]
        self.session.gpu_flags = "+".join(flags)
        self._dirty = True

    # -- drawing ---------------------------------------------------------------------------
    def _read_host_pressure(self) -> None:
        pressure = self.host_pressure_source()
        if disturbance_note(pressure) != disturbance_note(self.host_pressure):
            self._dirty = True
        self.host_pressure = pressure

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
        rows = {row.backend: row for row in self.session.rows()}
        compact = self.main_screen.has_class("-compact")
        for panel in self.main_screen.query(BackendPanel):
            panel.show(self.session, rows[panel.backend], panel.backend == pick, cpu, compact)
        self.main_screen.query_one(DispatchPanel).show(self.session)
        self.main_screen.query_one(GpuPanel).show(self.gpu, cpu, self.session.engine_busy.share())

    def status(self, text: str, error: bool = False) -> None:
        line = self.main_screen.query_one("#status-line", Static)
        line.set_class(error, "-error")
        line.update(f"{time.strftime('%H:%M:%S')}  {text}")

    # -- actions ---------------------------------------------------------------------------
    def _configure_record(self) -> Configure:
        legacy = self.session.legacy_api
        flags = tuple(b for b in ALL_BACKENDS if b in self.flags and not (legacy and b is Backend.CUDNN))
        return Configure(
            self.session.next_config_id(), self.session.workload, flags,
            profile_every_s=PROFILE_EVERY_S, profile_every_max_s=PROFILE_EVERY_MAX_S,
            sample_interval_s=SAMPLE_INTERVAL_S, recycle_growth_mib=self.recycle_growth_mib,
            legacy_api=legacy, priority=() if legacy else self.priority,
        )

    def _apply_flags(self) -> None:
        shown = set(self.flags) | ({Backend.CUDNN} if self.session.legacy_api else set())
        self.session.set_enabled(tuple(b for b in ALL_BACKENDS if b in shown))
        self.session.dispatch = None
        self._reconfigure()

    def _reconfigure(self) -> None:
        self.engine.configure(self._configure_record())
        self._dirty = True

    def action_toggle(self, backend_name: str) -> None:
        backend = Backend(backend_name)
        if self.session.legacy_api and backend is Backend.CUDNN:
            self.status("the legacy API has no cuDNN switch: sdp_kernel(...) never touches it (press l to leave legacy mode)",
                        error=True)
            return
        self.flags ^= {backend}
        self.status(f"{backend.label} flag {'on' if backend in self.flags else 'off'}")
        self._apply_flags()

    def action_toggle_legacy(self) -> None:
        self.session.legacy_api = not self.session.legacy_api
        if self.session.legacy_api:
            self.status("legacy API: flags applied as torch.backends.cuda.sdp_kernel(enable_flash, enable_math, "
                        "enable_mem_efficient); it has no cuDNN switch")
        else:
            self.status("flags applied with torch.nn.attention.sdpa_kernel (cuDNN has its own switch again)")
        self._apply_flags()

    def action_rotate_priority(self) -> None:
        if self.session.legacy_api:
            self.status("the legacy API has no priority order (press l to leave legacy mode)", error=True)
            return
        d = self.session.dispatch
        current = self.priority or (tuple(Backend(n) for n in d.priority_order) if d and d.priority_order else ALL_BACKENDS)
        self.priority = current[1:] + current[:1]
        self.status("priority: " + " > ".join(b.label for b in self.priority) + " (sdpa_kernel set_priority=True)")
        self._apply_flags()

    def set_workload(self, workload: Workload) -> None:
        if workload == self.session.workload:
            return
        self.session.set_workload(workload)
        self.status(f"workload: {workload.describe()}")
        self._reconfigure()

    def _edit(self, **changes: Any) -> None:
        try:
            self.set_workload(self.session.workload.with_changes(**changes))
        except WorkloadError as exc:
            self.status(f"not changed: {exc}", error=True)

    def action_scale_seq(self, factor: float) -> None:
        w = self.session.workload
        same_kv = w.kv_seq == w.seq
        seq = max(1, int(w.seq * factor))
        self._edit(seq=seq, kv_seq=seq if same_kv else w.kv_seq)

    def action_cycle_dtype(self) -> None:
        names = list(DTYPES)
        self._edit(dtype=names[(names.index(self.session.workload.dtype) + 1) % len(names)])

    def action_toggle_causal(self) -> None:
        self._edit(mask="none" if self.session.workload.causal else "causal")

    def action_toggle_direction(self) -> None:
        self._edit(direction="fwd" if self.session.workload.backward else "fwd+bwd")

    def action_edit_workload(self) -> None:
        def done(workload: Workload | None) -> None:
            if workload is not None:
                self.set_workload(workload)

        self.push_screen(WorkloadForm(self.session.workload), done)

    def action_pause(self) -> None:
        self.paused = not self.paused
        self.engine.set_paused(self.paused)
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

        self.push_screen(SweepScreen(self.session.workload, self.session.enabled, self.device, env.is_cpu), done)

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.BINDINGS))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for binding in self.BINDINGS:
            if binding.action not in ("quit", "help"):
                yield SystemCommand(binding.description, f"key {binding.key_display or binding.key}",
                                    lambda action=binding.action: self.run_action(action))
        yield SystemCommand("Help", "keys and what the clocks mean", self.action_help)
