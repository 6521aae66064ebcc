"""The engine's measuring: round-robin slices per backend (warm-up, CUDA-graph replays, an eager loop), and
kernel bursts in the profiler process, sent on as KernelCapture (and as trace files for a snapshot)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import replace

import torch

from ...core.protocol.engine_commands import CaptureKernels, CaptureTraces
from ...core.protocol.records import KernelCapture, Sample, TracesCaptured
from ..measuring import clocks, eligibility
from ..measuring.sdpa_call import forced
from ..profiler.profiler_client import ProfilerClient, ProfilerFailed, burst_timeout_s
from .backend_runs import BackendRuns
from .run_state import BackendRun, inject_fault, next_profile_interval
from .slice_order import SliceKind, next_run, slice_kind

SLICE_TARGET_US = 2_000.0
"""Each clock's loop in one slice lasts about this long (or one call, if a call is longer)."""
SLICE_WARMUP_US = {"cpu": 5_000.0, "cuda": 1_000.0}
"""Untimed calls before each slice's timed loops, about this long per device type. Between two
slices of a backend the engine idles (``sample_interval_s``); on the CPU the thread pool's
workers fall asleep and caches go cold meanwhile. At [1, 2, 128, 32] fp16 on a busy 2-core
machine (2026-11-23) the live eager medians read 3-80x the headless ones without a warm-up;
with 1 ms of it still 10-20 % high, with about 5 ms within 2 %
(benchmarks/monitor/live_vs_report.py)."""


class TimingSlices(BackendRuns):
    """Mixin of :class:`runner.Engine`: the attributes and method below are the engine's (the common ones declared
    in :class:`BackendRuns`)."""

    profiler: ProfilerClient | None
    _cursor: int
    _fault: str
    _send_startup: Callable[..., None]  # the engine's

    def _measure_next(self) -> None:
        runs = list(self.runs.values())
        chosen = next_run(runs, self._cursor, time.monotonic(), self.config.sample_interval_s)
        if chosen is not None:
            self._cursor = (chosen + 1) % len(runs)
            self._slice(runs[chosen])

    def _slice(self, run: BackendRun) -> None:
        cid = self.config.config_id
        kind = slice_kind(run, time.monotonic())
        try:
            with forced((run.backend,)):
                if kind is SliceKind.BURST:
                    if self.channel.poll(0):  # a key was pressed: its Configure goes first
                        return
                    if self._profile(run) is not None:  # a slice of its own (None: not ready yet)
                        return
                gpu_us, graph_calls = None, 0
                # the profiler process starting beside this slice (a process is started only between slices): its
                # eager time stands in only until one timed apart from it comes (``BackendState.add_eager``)
                profiler_starting = self.profiler is not None and self.profiler.starting
                if kind is SliceKind.GRAPH:  # the first number was eager: on screen without a capture
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
            self._fail(run.backend, eligibility.oom(exc))
            return
        except RuntimeError as exc:
            self._check_sticky(exc)
            self._fail(run.backend, eligibility.Eligibility("error", str(exc).splitlines()[0], (str(exc),)))
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
        sm_mhz = clocks.sm_clock_mhz(self.device) if gpu_us is not None else None
        self.channel.send(Sample(cid, run.backend, gpu_us, eager_us, method, calls, time.time(), busy_s, sm_mhz,
                                 profiler_starting))
        if gpu_us is not None:
            self.startup.mark("first_gpu_call")

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
        started = time.monotonic()
        try:
            capture = self.profiler.capture(request, burst_timeout_s(calls, run.per_call_us))
        except ProfilerFailed as exc:
            capture = self._capture_failed(run, exc)
        return self._profiled(run, capture, time.monotonic() - started)

    def _capture_failed(self, run: BackendRun, exc: ProfilerFailed) -> KernelCapture:
        return KernelCapture(self.config.config_id, run.backend, (), (), None, time.time(), error=str(exc))

    def _profiled(self, run: BackendRun, capture: KernelCapture, took_s: float = 0.0) -> KernelCapture:
        capture = replace(capture, peak_bytes=run.peak_bytes)
        run.profile_interval_s = next_profile_interval(run.profile_interval_s, self.config, took_s)
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
