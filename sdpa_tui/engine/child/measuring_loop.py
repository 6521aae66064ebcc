"""The measuring loop inside the engine process: records in, a configure set up, round-robin short slices per
backend, health and host-memory checks. Its parts are mixins: ``backend_runs`` (eligibility, runs, memory),
``timing_slices`` (slices and kernel bursts), ``accuracy_peaks`` (accuracy and the matmul peak); the small
pieces with no loop in them are in ``run_state``."""

from __future__ import annotations

import os
import time

import torch

from ...core.backends import ALL_BACKENDS, Backend
from ...core.protocol.engine_commands import CaptureTraces, Configure, SetPaused, Shutdown
from ...core.protocol.records import BackendStatus, Dispatch, EngineHealth, Log, Ready, Recycling
from ...core.status import Status
from ..measuring import cpu_threads, eligibility
from ..measuring.environment import describe, make_current, resolve_device
from ..measuring.sdpa_call import Inputs
from ..output_capture import OutputCapture
from ..profiler import profiler_guard
from ..profiler.profiler_client import ProfilerClient, ProfilerFailed
from ..record_pipe import Channel
from . import host_memory
from .accuracy_peaks import AccuracyAndPeaks
from .host_growth import HostGrowth
from .run_state import FAULT_ENV, BackendRun, latest_configure_only
from .slice_order import SliceKind, slice_kind
from .startup_times import StartupClock, write_if_asked
from .timing_slices import TimingSlices

RSS_CHECK_EVERY_S = 5.0


class Engine(AccuracyAndPeaks, TimingSlices):
    """The engine process's loop: records in, configure, measure, health; the parts are its mixins."""

    def __init__(self, channel: Channel, device_request: str, capture: OutputCapture,
                 startup: StartupClock | None = None, profiler: ProfilerClient | None = None) -> None:
        self.channel = channel
        self.startup = startup or StartupClock()
        self.device_request = device_request
        self.capture = capture
        self.device = torch.device("cpu")
        self.config: Configure | None = None
        self.inputs: Inputs | None = None
        self.runs: dict[Backend, BackendRun] = {}
        self.paused = False
        self.stopping = False
        self._eligibility: dict[tuple, eligibility.Eligibility] = {}
        self._peaks: dict[str, float] = {}
        self._fault = os.environ.get(FAULT_ENV, "")
        self._cursor = 0
        self.recycled = False  # stopped so that a fresh engine gives host memory back
        self._growth = HostGrowth()  # host memory growth, first uses counted out
        self._next_rss_check = 0.0
        # Kernel capture runs in a sibling process: this one never starts a profiler. One may have been started
        # before this process imported torch (``profiler_client.start_early``).
        self.profiler: ProfilerClient | None = profiler
        self._next_health = 0.0
        self._peak_due = False  # the matmul peak of the configured dtype is still to be sent
        self._accuracy_due: list[Backend] = []  # backends set up whose accuracy is still to be sent
        self._grad_ref = None  # fwd+bwd: float64 MATH's dq, dk, dv while a configuration's accuracies are sent

    # -- main loop -----------------------------------------------------------------------
    def run(self) -> None:
        self.device, notes = resolve_device(self.device_request)
        make_current(self.device)
        self.startup.mark("cuda_init")
        profiler_guard.install()
        if self.device.type == "cpu":
            cpu_threads.leave_a_core()  # before describe(): the header names the thread count
        self.profiler = self._profiler_for(self.device)
        self.channel.send(Ready(describe(self.device, notes)))
        self.startup.mark("ready")
        if self.device.type == "cuda":  # its torch import and CUPTI's start run beside this process's set-up
            self._start_profiler()
        self._flush_logs()
        try:
            while not self.stopping:
                runnable = bool(self.runs) and not self.paused
                wait = self._wait_time() if runnable else 0.5
                for record in latest_configure_only(self.channel.receive_all(timeout=wait)):
                    self.handle(record)
                if not self.stopping and self.runs and not self.paused:
                    self._send_accuracies_when_due()
                    self._measure_next()
                    self._check_growth()
                    self._report_health()
                if not (self.stopping or self.paused):
                    self._send_peak_when_due()
                self.profiler.reap()
                self._flush_logs()
        finally:
            self.profiler.close()
        self._release()

    def _profiler_for(self, device: torch.device) -> ProfilerClient:
        """The profiler process started early (``profiler_client.start_early``) when it is for this device, else a
        new client (its process starts when asked)."""
        early = self.profiler
        if early is not None and early.device == str(device):
            return early
        if early is not None:
            early.close()  # started for a GPU that torch did not give
        return ProfilerClient(str(device))

    def _report_health(self) -> None:
        """Every few seconds while measuring: this process's RSS, and the profiler sessions it
        started (0 by design; tests and the soak read it from the real process)."""
        now = time.monotonic()
        if now < self._next_health:
            return
        self._next_health = now + RSS_CHECK_EVERY_S
        self.channel.send(EngineHealth(host_memory.rss_mib(), profiler_guard.starts(), self.profiler.pid))

    def _check_growth(self) -> None:
        """Stop, to be replaced, once host memory grew past the allowance: a safety net, since
        only a new process gets back what torch keeps (docs/lab-notes/faults.md). What a workload's first
        use loads is not growth (``HostGrowth``): a fresh engine would load it again."""
        allowance = self.config.recycle_growth_mib if self.config else 0.0
        now = time.monotonic()
        if allowance <= 0 or now < self._next_rss_check or not self._settled():
            return
        self._next_rss_check = now + RSS_CHECK_EVERY_S
        rss = host_memory.rss_mib()
        growth = None if rss is None else self._growth.growth(rss, settled=True)
        if growth is not None and growth > allowance:
            self.channel.send(Recycling(rss, self._growth.baseline_mib))
            self.recycled = self.stopping = True

    def _settled(self) -> bool:
        """The workload is past its first use: every backend's graph captured and first burst
        done, the dtype's matmul peak measured."""
        return (bool(self.runs) and not self._peak_due
                and all(r.captured and not r.graph_due for r in self.runs.values()))

    def _wait_time(self) -> float:
        """Seconds until the next backend is due for a sample (0 when one is due now)."""
        interval = self.config.sample_interval_s if self.config else 0.0
        if interval <= 0 or self._accuracy_due:
            return 0.0
        return max(0.0, min(r.due_at(interval) for r in self.runs.values()) - time.monotonic())

    def handle(self, record: object) -> None:
        """One record from the UI, as the loop reads it: stop, pause, a configuration to set up (once: the same one
        again is already set up), a trace capture."""
        if isinstance(record, Shutdown):
            self.stopping = True
        elif isinstance(record, SetPaused):
            self.paused = record.paused
        elif isinstance(record, Configure):
            # The supervisor sends the configuration again when an engine says Ready, and the app sent it already:
            # set up once (a second pass reset every first number and put the graphs' capture, and so the kernels'
            # names, 0.25 s later).
            if record != self.config:
                self._configure(record)
        elif isinstance(record, CaptureTraces):
            self._capture_traces(record)

    def _flush_logs(self) -> None:
        for line in self.capture.read_lines():
            self.channel.send(Log(line))
        for line in self.profiler.read_lines() if self.profiler else ():
            self.channel.send(Log(f"profiler process: {line}"))

    # -- configuration ---------------------------------------------------------------------
    def _configure(self, config: Configure) -> None:
        self.startup.mark("configure")
        if config.recycle_growth_mib > 0:  # before the inputs and the dispatch probe: both load kernels
            self._growth.starting(config.workload, host_memory.rss_mib)
        same_inputs = self.inputs is not None and self.config is not None and config.workload == self.config.workload
        if not same_inputs:
            self._release()
        self.config = config
        cid = config.config_id
        try:
            if not same_inputs:
                self.inputs = Inputs.make(config.workload, self.device)
                self.startup.mark("inputs")
        except torch.OutOfMemoryError as exc:
            verdict = eligibility.oom(exc)
            for backend in config.enabled:
                self.channel.send(BackendStatus(cid, backend, verdict.status, f"inputs: {verdict.reason}", verdict.details))
            self.channel.send(Dispatch(cid, None, eligibility.priority_order(), "the inputs do not fit in memory"))
            self.inputs = None
            return
        choice = eligibility.choose(self.inputs, config.enabled, config.legacy_api, config.priority)
        measured = choice.effective if config.legacy_api else config.enabled
        self.startup.mark("dispatch")
        self.channel.send(Dispatch(cid, choice.backend, choice.priority_order, choice.reason,
                                   choice.effective, self._dispatch_note(config, choice)))
        for backend in [b for b in self.runs if b not in measured]:  # switched off: free its graph
            self._drop(backend)
        fresh: list[Backend] = []
        # SDPA's pick first, each backend sampled as soon as it is ready: the first number (eager) reaches the screen
        # before the other backends are set up, then the pick's GPU/call number and kernels' names (its graph), and
        # the accuracy (a float64 reference) waits until every backend has its first number.
        for backend in sorted(ALL_BACKENDS, key=lambda b: b is not choice.backend):
            self._flush_logs()
            if backend in self.runs:  # flags changed, workload the same: its clocks are still valid
                self.channel.send(BackendStatus(cid, backend, "ok"))
                kept = self.runs[backend]
                kept.last_sample, kept.samples = 0.0, 0  # a fresh number now, before any burst
                continue
            verdict = self._eligible(backend)
            if backend is choice.backend:
                self.startup.mark("pick_probe")
            if backend not in measured or verdict.status != Status.OK:
                self.channel.send(BackendStatus(cid, backend, verdict.status, verdict.reason, verdict.details,
                                                measured=backend in measured))
                continue
            if config.recycle_growth_mib > 0:  # a backend switched on again: its kernels too
                self._growth.starting((config.workload, backend), host_memory.rss_mib)
            try:
                self.runs[backend] = self._prepare(backend)
                self.startup.mark("pick_prepare")
                self.channel.send(BackendStatus(cid, backend, "ok"))
            except torch.OutOfMemoryError as exc:
                self._fail(backend, eligibility.oom(exc))
                continue
            except RuntimeError as exc:
                self._check_sticky(exc)
                self._fail(backend, eligibility.Eligibility(Status.ERROR, str(exc).splitlines()[0], (str(exc),)))
                continue
            if not self.paused:  # paused: the device is left alone
                run = self.runs[backend]
                self._slice(run)
                self._after_first_sample()
                if backend is choice.backend and slice_kind(run, time.monotonic()) is SliceKind.GRAPH:
                    self._slice(run)  # its GPU/call number and its kernels' names before the others are set up
            fresh.append(backend)
        self.startup.mark("all_first_samples")
        # a kept backend whose accuracy was still to come (its graph not captured yet) keeps its turn
        self._accuracy_due = [b for b in self._accuracy_due if b in self.runs and b not in fresh] + fresh
        self._peak_due = True

    def _after_first_sample(self) -> None:
        """Once, after the first Sample: say how long start-up took."""
        if self.startup.has("first_sample") or not self.runs:
            return
        self.startup.mark("first_sample")
        self._send_startup()
        self._start_profiler()  # on the CPU it starts now (two cores: the first number first)

    def _start_profiler(self) -> None:
        """Start the profiler process if there is none, without waiting: its interpreter, torch and CUPTI start
        while this process sets the backends up."""
        try:
            self.profiler.poll_ready()
        except ProfilerFailed:
            pass  # the first burst starts a new one and says why

    def _send_startup(self, complete: bool = False) -> None:
        record = self.startup.record(complete)
        self.channel.send(record)
        write_if_asked(record)

    def _dispatch_note(self, config: Configure, choice: eligibility.Choice) -> str:
        if config.legacy_api and Backend.CUDNN in choice.effective:
            return eligibility.LEGACY_NOTE
        if config.priority:
            note = "custom priority (sdpa_kernel set_priority=True): " + " > ".join(b.label for b in config.priority)
            if self.device.type == "cpu":  # seen with torch 2.13: the CPU choice ignores the order
                note += "; torch's CPU dispatch does not follow the priority order"
            return note
        return ""
