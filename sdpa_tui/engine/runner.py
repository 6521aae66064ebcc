"""The measuring loop inside the engine process: round-robin short slices per backend."""

from __future__ import annotations

import gc
import os
import time
from dataclasses import dataclass, replace

import torch

from ..core.backends import ALL_BACKENDS, Backend
from ..core.engine_commands import CaptureKernels, CaptureTraces, Configure, SetPaused, Shutdown
from ..core.records import (
    Accuracy,
    BackendStatus,
    Dispatch,
    EngineHealth,
    KernelCapture,
    Log,
    PeakFlops,
    Ready,
    Recycling,
    Sample,
    TracesCaptured,
)
from . import call_memory, clocks, cpu_threads, dispatch, host_memory, profiler_guard, quality
from .calls import Inputs, forced
from .channel import Channel
from .environment import describe, resolve_device
from .host_growth import HostGrowth
from .output_capture import OutputCapture
from .profiler_client import ProfilerClient, ProfilerFailed, burst_timeout_s
from .startup_times import StartupClock, write_if_asked

SLICE_TARGET_US = 2_000.0
"""Each clock's loop in one slice lasts about this long (or one call, if a call is longer)."""
WARMUP_CALLS = 3
SLICE_WARMUP_US = {"cpu": 5_000.0, "cuda": 1_000.0}
"""Untimed calls before each slice's timed loops, about this long per device type. Between two
slices of a backend the engine idles (``sample_interval_s``); on the CPU the thread pool's
workers fall asleep and caches go cold meanwhile. At [1, 2, 128, 32] fp16 on a busy 2-core
machine (2026-11-23) the live eager medians read 3-80x the headless ones without a warm-up;
with 1 ms of it still 10-20 % high, with about 5 ms within 2 %
(benchmarks/live_vs_report.py)."""
RSS_CHECK_EVERY_S = 5.0

_STICKY = ("illegal memory access", "device-side assert", "unspecified launch failure",
           "illegal instruction", "misaligned address", "CUDA error: an illegal")


FAULT_ENV = "SDPA_TUI_FAULT"
"""Fault injection for demonstrations and tests: ``device-assert`` makes the first timing slice
trigger a real device-side assert (a sticky CUDA error); ``exit`` makes the engine die; ``leak``
makes every slice keep 1 MiB of host memory for good (the growth ``--engine-memory-mib`` is for)."""

LEAK_MIB_PER_SLICE = 1
_leaked: list[bytearray] = []  # what ``leak`` keeps


def inject_fault(kind: str, device: torch.device) -> None:
    if kind == "exit":
        os._exit(9)
    if kind == "leak":
        _leaked.append(bytearray(LEAK_MIB_PER_SLICE << 20))  # zero-filled: resident at once
    if kind == "device-assert" and device.type == "cuda":
        table = torch.zeros(4, device=device)
        table[torch.tensor([1 << 20], device=device)] += 1  # out of bounds: the kernel asserts
        torch.cuda.synchronize(device)


def next_profile_interval(previous_s: float, config: Configure) -> float:
    """Seconds to the next burst of a backend: ``profile_every_s``, doubling after each burst up
    to ``profile_every_max_s`` when that is larger. A workload's kernels do not change while it
    runs, and each burst is a pause in timing (the profiler process runs it while the engine
    waits)."""
    if previous_s <= 0 or config.profile_every_max_s <= config.profile_every_s:
        return config.profile_every_s
    return min(previous_s * 2, config.profile_every_max_s)


def latest_configure_only(records: list[object]) -> list[object]:
    """Drop every Configure but the last of a batch: keys pressed while the engine was busy
    each sent one, and only the newest is still wanted (each costs a full set-up)."""
    last = max((i for i, r in enumerate(records) if isinstance(r, Configure)), default=-1)
    return [r for i, r in enumerate(records) if i == last or not isinstance(r, Configure)]


class StickyCudaError(RuntimeError):
    """An error that poisons the CUDA context: the process must exit."""


@dataclass
class BackendRun:
    """A backend that runs the current workload, with its clocks ready."""

    backend: Backend
    step: object
    per_call_us: float
    graph: clocks.GraphClock | None = None
    graph_due: bool = False  # CUDA: the graph is captured at the next slice (the first number is eager)
    next_profile: float = 0.0
    profile_interval_s: float = 0.0
    captured: bool = False  # had its first kernel capture (the peak waits for every backend's)
    last_sample: float = 0.0
    samples: int = 0
    peak_bytes: int | None = None


class Engine:
    def __init__(self, channel: Channel, device_request: str, capture: OutputCapture,
                 startup: StartupClock | None = None) -> None:
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
        self._eligibility: dict[tuple, dispatch.Eligibility] = {}
        self._peaks: dict[str, float] = {}
        self._fault = os.environ.get(FAULT_ENV, "")
        self._cursor = 0
        self.recycled = False  # stopped so that a fresh engine gives host memory back
        self._growth = HostGrowth()  # host memory growth, first uses counted out
        self._next_rss_check = 0.0
        # Kernel capture runs in a sibling process: this one never starts a profiler.
        self.profiler: ProfilerClient | None = None
        self._next_health = 0.0
        self._peak_due = False  # the matmul peak of the configured dtype is still to be sent

    # -- main loop -----------------------------------------------------------------------
    def run(self) -> None:
        self.device, notes = resolve_device(self.device_request)
        self.startup.mark("cuda_init")
        profiler_guard.install()
        if self.device.type == "cpu":
            cpu_threads.leave_a_core()  # before describe(): the header names the thread count
        self.profiler = ProfilerClient(str(self.device))
        self.channel.send(Ready(describe(self.device, notes)))
        self.startup.mark("ready")
        self._flush_logs()
        try:
            while not self.stopping:
                runnable = bool(self.runs) and not self.paused
                wait = self._wait_time() if runnable else 0.5
                for record in latest_configure_only(self.channel.receive_all(timeout=wait)):
                    self._handle(record)
                if not self.stopping and self.runs and not self.paused:
                    self._measure_next()
                    self._check_growth()
                    self._report_health()
                if not (self.stopping or self.paused):
                    self._send_peak_when_due()
                self._flush_logs()
        finally:
            self.profiler.close()
        self._release()

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
        only a new process gets back what torch keeps (docs/faults.md). What a workload's first
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
        if interval <= 0:
            return 0.0
        now = time.monotonic()
        return max(0.0, min(r.last_sample + interval - now for r in self.runs.values()))

    def _handle(self, record: object) -> None:
        if isinstance(record, Shutdown):
            self.stopping = True
        elif isinstance(record, SetPaused):
            self.paused = record.paused
        elif isinstance(record, Configure):
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
            verdict = dispatch.oom(exc)
            for backend in config.enabled:
                self.channel.send(BackendStatus(cid, backend, verdict.status, f"inputs: {verdict.reason}", verdict.details))
            self.channel.send(Dispatch(cid, None, dispatch.priority_order(), "the inputs do not fit in memory"))
            self.inputs = None
            return
        choice = dispatch.choose(self.inputs, config.enabled, config.legacy_api, config.priority)
        measured = choice.effective if config.legacy_api else config.enabled
        self.startup.mark("dispatch")
        self.channel.send(Dispatch(cid, choice.backend, choice.priority_order, choice.reason,
                                   choice.effective, self._dispatch_note(config, choice)))
        for backend in [b for b in self.runs if b not in measured]:  # switched off: free its graph
            self._drop(backend)
        fresh: list[Backend] = []
        # SDPA's pick first, each backend sampled as soon as it is ready: the first number
        # reaches the screen before the other backends are set up, and the accuracy (a float64
        # reference) waits until every backend has its first number.
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
            if backend not in measured or verdict.status != "ok":
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
                self._fail(backend, dispatch.oom(exc))
                continue
            except RuntimeError as exc:
                self._check_sticky(exc)
                self._fail(backend, dispatch.Eligibility("error", str(exc).splitlines()[0], (str(exc),)))
                continue
            if not self.paused:  # paused: the device is left alone
                self._slice(self.runs[backend])
                self._after_first_sample()
            fresh.append(backend)
        self.startup.mark("all_first_samples")
        self._send_accuracies([b for b in fresh if b in self.runs])
        self._peak_due = True

    def _send_accuracies(self, backends: list[Backend]) -> None:
        if backends:
            reference = self._reference()
            for backend in backends:
                if backend in self.runs:  # a backend that failed meanwhile has none
                    self._send_accuracy(backend, reference)
            del reference
        self.startup.mark("accuracy")

    def _after_first_sample(self) -> None:
        """Once, after the first Sample: say how long start-up took."""
        if self.startup.has("first_sample") or not self.runs:
            return
        self.startup.mark("first_sample")
        self._send_startup()
        try:  # its interpreter and torch start now, while the other backends are set up
            self.profiler.poll_ready()
        except ProfilerFailed:
            pass  # the first burst starts a new one and says why

    def _send_startup(self, complete: bool = False) -> None:
        record = self.startup.record(complete)
        self.channel.send(record)
        write_if_asked(record)

    def _dispatch_note(self, config: Configure, choice: dispatch.Choice) -> str:
        if config.legacy_api and Backend.CUDNN in choice.effective:
            return dispatch.LEGACY_NOTE
        if config.priority:
            note = "custom priority (sdpa_kernel set_priority=True): " + " > ".join(b.label for b in config.priority)
            if self.device.type == "cpu":  # seen with torch 2.13: the CPU choice ignores the order
                note += "; torch's CPU dispatch does not follow the priority order"
            return note
        return ""

    def _send_peak_when_due(self) -> None:
        """The matmul peak once every backend had its first burst: full panels come first
        (on a CPU the peak's matmuls took over a second, as long as a first burst)."""
        if self._peak_due and all(r.captured for r in self.runs.values()) and not self.channel.poll(0):
            self._peak_due = False
            self._send_peak(self.config.workload.dtype)

    def _send_peak(self, dtype: str) -> None:
        """Measure the matmul ceiling once per dtype per engine."""
        if dtype in self._peaks:
            return
        try:
            tflops, detail = quality.matmul_peak_tflops(dtype, self.device)
        except (RuntimeError, torch.OutOfMemoryError) as exc:
            self._check_sticky(exc)
            self._free_memory()
            tflops, detail = 0.0, f"not measured: {str(exc).splitlines()[0]}"
        self._peaks[dtype] = tflops
        self.channel.send(PeakFlops(dtype, tflops, detail))

    def _reference(self) -> "torch.Tensor | str":
        """The float64 output to compare against, or why there is none."""
        if self.device.type == "cuda":
            need = self.config.workload.math_bytes_lower_bound * 2  # float64 scores
            if need > torch.cuda.mem_get_info(self.device)[0]:
                return f"the float64 reference would need at least {need / 2**30:.1f} GiB: not computed"
        try:
            return quality.reference_output(self.inputs)
        except torch.OutOfMemoryError:
            self._free_memory()
            return "the float64 reference does not fit in memory"
        except RuntimeError as exc:
            self._check_sticky(exc)
            return f"no float64 reference: {str(exc).splitlines()[0]}"

    def _send_accuracy(self, backend: Backend, reference: "torch.Tensor | str") -> None:
        cid = self.config.config_id
        if isinstance(reference, str):
            self.channel.send(Accuracy(cid, backend, None, None, reference))
            return
        with forced((backend,)), torch.no_grad():
            out = torch.nn.functional.scaled_dot_product_attention(
                self.inputs.q, self.inputs.k, self.inputs.v, **self.inputs.sdpa_kwargs()
            )
        max_abs, max_rel = quality.compare(out, reference)
        del out
        self.channel.send(Accuracy(cid, backend, max_abs, max_rel, "forward output vs float64 MATH"))

    def _eligible(self, backend: Backend) -> dispatch.Eligibility:
        """Probe once per workload and backend: torch warns some reasons only once per process."""
        key = (self.config.workload, backend)
        if key not in self._eligibility:
            verdict = self._clearly_too_big(backend) or dispatch.probe(self.inputs, backend, self.device)
            if verdict.status == "oom":
                self._free_memory()
            else:
                self._eligibility[key] = verdict
            return verdict
        return self._eligibility[key]

    def _clearly_too_big(self, backend: Backend) -> dispatch.Eligibility | None:
        """MATH's O(N²) memory, estimated before launching what cannot fit (an OOM costs seconds)."""
        if backend is not Backend.MATH or self.device.type != "cuda":
            return None
        need = self.config.workload.math_bytes_lower_bound
        free, _ = torch.cuda.mem_get_info(self.device)
        if need <= free:
            return None
        return dispatch.Eligibility(
            "oom", f"needs at least {need / 2**30:.2f} GiB, {free / 2**30:.2f} GiB free: not launched",
            (f"estimate: 2 x batch x heads x seq x kv_seq x 4 bytes = {need:,} bytes; free: {free:,} bytes",),
        )

    def _prepare(self, backend: Backend) -> BackendRun:
        step = self.inputs.step()
        with forced((backend,)):
            for _ in range(WARMUP_CALLS):
                step()
            per_call = clocks.eager_us(step, self.device, 1)
            run = BackendRun(backend, step, per_call)
            run.peak_bytes = call_memory.peak_extra_bytes(step, self.device)
            run.graph_due = self.device.type == "cuda"
        return run

    def _capture_graph(self, run: BackendRun) -> None:
        """The GPU/call clock's graph, at the backend's second slice: the first number on screen
        is the eager clock, without waiting for a capture."""
        run.graph_due = False
        self.startup.mark("graph_capture_start")
        run.graph = clocks.GraphClock(run.step, self.device, run.per_call_us)
        self.startup.mark("graph_capture")
        if run.graph.method != "graph":
            self.channel.send(Log(f"{run.backend.value}: CUDA graph capture failed "
                                  f"({run.graph.capture_error}); timing with events"))

    def _drop(self, backend: Backend) -> None:
        run = self.runs.pop(backend, None)
        if run and run.graph:
            run.graph.release()

    def _fail(self, backend: Backend, verdict: dispatch.Eligibility) -> None:
        self._drop(backend)
        self._free_memory()
        self.channel.send(BackendStatus(self.config.config_id, backend, verdict.status, verdict.reason, verdict.details))

    def _release(self) -> None:
        for run in self.runs.values():
            if run.graph:
                run.graph.release()
        self.runs.clear()
        self.inputs = None
        self._free_memory()

    def _free_memory(self) -> None:
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    # -- measuring -------------------------------------------------------------------------
    def _measure_next(self) -> None:
        now = time.monotonic()
        interval = self.config.sample_interval_s
        order = list(self.runs)
        for i in range(len(order)):
            backend = order[(self._cursor + i) % len(order)]
            if now - self.runs[backend].last_sample >= interval:
                self._cursor = (self._cursor + i + 1) % len(order)
                self._slice(self.runs[backend])
                return

    def _slice(self, run: BackendRun) -> None:
        cid = self.config.config_id
        try:
            with forced((run.backend,)):
                if run.samples and time.monotonic() >= run.next_profile:  # first numbers first
                    if self.channel.poll(0):  # a key was pressed: its Configure goes first
                        return
                    if self._profile(run) is not None:  # a slice of its own (None: not ready yet)
                        return
                gpu_us, graph_calls = None, 0
                if run.graph_due:
                    self._capture_graph(run)
                self._warm_up(run)
                if run.graph is not None:
                    per_replay = run.per_call_us * run.graph.calls
                    replays = clocks.calls_for(SLICE_TARGET_US, per_replay, 50)
                    gpu_us = run.graph.sample(replays)
                    graph_calls = replays * run.graph.calls
                calls = clocks.calls_for(SLICE_TARGET_US, run.per_call_us, 500)
                eager_us = clocks.eager_us(run.step, self.device, calls)
        except torch.OutOfMemoryError as exc:
            self._fail(run.backend, dispatch.oom(exc))
            return
        except RuntimeError as exc:
            self._check_sticky(exc)
            self._fail(run.backend, dispatch.Eligibility("error", str(exc).splitlines()[0], (str(exc),)))
            return
        if self._fault:
            try:
                inject_fault(self._fault, self.device)
            except RuntimeError as exc:
                self._check_sticky(exc)
                raise
        run.per_call_us = gpu_us or eager_us
        run.last_sample = time.monotonic()
        run.samples += 1
        method = run.graph.method if run.graph else "pending" if run.graph_due else "none"
        # device time of the slice: every timed call at its GPU time (eager on the CPU)
        busy_s = ((gpu_us or 0.0) * graph_calls + (gpu_us or eager_us) * calls) / 1e6
        self.channel.send(Sample(cid, run.backend, gpu_us, eager_us, method, calls, time.time(), busy_s))

    def _warm_up(self, run: BackendRun) -> None:
        """Wake the thread pool (CPU) or the GPU clocks after the gap since the last slice."""
        warm_up_us = SLICE_WARMUP_US.get(self.device.type, 1_000.0)
        for _ in range(clocks.calls_for(warm_up_us, run.per_call_us, 50)):
            run.step()
        clocks.synchronize(self.device)

    def _profile(self, run: BackendRun, trace_path: str = "", wait: bool = False) -> KernelCapture | None:
        """A burst of ``run``'s backend in the profiler process, sent on as a KernelCapture (with
        ``error`` when the process failed). None when the process is still starting and
        ``wait`` is False: timing goes on meanwhile and the burst comes a moment later."""
        if not wait:
            try:
                ready = self.profiler.poll_ready()
            except ProfilerFailed as exc:
                return self._profiled(run, self._capture_failed(run, exc))
            if not ready:
                run.next_profile = time.monotonic() + 0.5
                return None
            self.startup.mark("profiler_ready")
        calls = max(3, clocks.calls_for(10_000.0, run.per_call_us, 10))
        request = CaptureKernels(self.config.config_id, self.config.workload, run.backend, calls, trace_path)
        try:
            capture = self.profiler.capture(request, burst_timeout_s(calls, run.per_call_us))
        except ProfilerFailed as exc:
            capture = self._capture_failed(run, exc)
        return self._profiled(run, capture)

    def _capture_failed(self, run: BackendRun, exc: ProfilerFailed) -> KernelCapture:
        return KernelCapture(self.config.config_id, run.backend, (), (), None, time.time(), error=str(exc))

    def _profiled(self, run: BackendRun, capture: KernelCapture) -> KernelCapture:
        capture = replace(capture, peak_bytes=run.peak_bytes)
        run.profile_interval_s = next_profile_interval(run.profile_interval_s, self.config)
        run.next_profile = time.monotonic() + run.profile_interval_s
        run.captured = True
        self.channel.send(capture)
        if not self.startup.complete and all(r.captured for r in self.runs.values()):
            self.startup.mark("all_kernel_captures")
            self._send_startup(complete=True)
        return capture

    def _capture_traces(self, request: CaptureTraces) -> None:
        paths, errors = [], []
        for backend, run in list(self.runs.items()):
            path = os.path.join(request.directory, f"trace-{backend.value}.json")
            capture = self._profile(run, trace_path=path, wait=True)
            if capture.error:
                errors.append(f"{backend.value}: {capture.error}")
            if capture.kernels and os.path.exists(path):
                paths.append(path)
        self.channel.send(TracesCaptured(request.request_id, tuple(paths), "; ".join(errors)))

    def _check_sticky(self, exc: BaseException) -> None:
        text = str(exc)
        if self.device.type == "cuda" and any(marker in text for marker in _STICKY):
            raise StickyCudaError(text.splitlines()[0]) from exc

