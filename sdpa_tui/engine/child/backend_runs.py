"""The engine's backends for the current workload: whether each is eligible (probed once), its run prepared
(warm-up, eager estimate, peak memory), its CUDA graph captured, dropped or failed, and memory given back."""

from __future__ import annotations

import gc
import time

import torch

from ...core.backends import Backend
from ...core.protocol.engine_commands import Configure
from ...core.protocol.records import BackendStatus, GraphKernels, Log
from ...core.status import Status
from ..measuring import call_memory, clocks, eligibility
from ..measuring.sdpa_call import Inputs, forced
from ..record_pipe import Channel
from .run_state import BackendRun, check_sticky
from .startup_times import StartupClock

WARMUP_CALLS = 3


class BackendRuns:
    """Mixin of :class:`runner.Engine`, and the base of its other parts: the attributes below are the engine's."""

    channel: Channel
    startup: StartupClock
    device: torch.device
    config: Configure | None
    inputs: Inputs | None
    runs: dict[Backend, BackendRun]
    _eligibility: dict[tuple, eligibility.Eligibility]

    def _eligible(self, backend: Backend) -> eligibility.Eligibility:
        """Probe once per workload and backend: torch warns some reasons only once per process."""
        key = (self.config.workload, backend)
        if key not in self._eligibility:
            verdict = self._clearly_too_big(backend) or eligibility.probe(self.inputs, backend, self.device)
            if verdict.status == Status.OOM:
                self._free_memory()
            else:
                self._eligibility[key] = verdict
            return verdict
        return self._eligibility[key]

    def _clearly_too_big(self, backend: Backend) -> eligibility.Eligibility | None:
        """MATH's O(N²) memory, estimated before launching what cannot fit (an OOM costs seconds)."""
        if backend is not Backend.MATH or self.device.type != "cuda":
            return None
        need = self.config.workload.math_bytes_lower_bound
        free, _ = torch.cuda.mem_get_info(self.device)
        if need <= free:
            return None
        return eligibility.Eligibility(
            Status.OOM, f"needs at least {need / 2**30:.2f} GiB, {free / 2**30:.2f} GiB free: not launched",
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
        if run.graph.kernels:  # the kernels' names at once; their times come with the profiler's first burst
            self.channel.send(GraphKernels(self.config.config_id, run.backend, run.graph.kernels, time.time()))
            self.startup.mark("graph_kernels")
            if all(r.graph is not None and r.graph.kernels for r in self.runs.values()):
                self.startup.mark("all_graph_kernels")
        if run.graph.method != "graph":
            self.channel.send(Log(f"{run.backend.value}: CUDA graph capture failed "
                                  f"({run.graph.capture_error}); timing with events"))

    def _drop(self, backend: Backend) -> None:
        run = self.runs.pop(backend, None)
        if run and run.graph:
            run.graph.release()

    def _fail(self, backend: Backend, verdict: eligibility.Eligibility) -> None:
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


    def _check_sticky(self, exc: BaseException) -> None:
        check_sticky(self.device, exc)
