"""Two of the three clocks: GPU per call (CUDA graph replay) and eager per call (host loop); and two more that
measure something else, each under its own name: the host's own time per call and the GPU's per call queued behind
eager launches.

The third, the kernel clock, comes from a profiler burst (``profiling.py``) and is never
taken while these run: the profiler slows the host side down.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import torch

from ...core.protocol.records import KernelInfo
from . import graph_nodes

GRAPH_TARGET_US = 500.0
"""One graph replay should last at least this long, so event resolution does not matter."""
MAX_CALLS_PER_GRAPH = 64


_NO_SM_CLOCK: set[torch.device] = set()


def sm_clock_mhz(device: torch.device) -> int | None:
    """The GPU's SM clock now (NVML, as nvidia-smi reads it), or None (the CPU, no NVML). Times move with it: on an
    H100 under a sustained heavy call it fell from 1,980 to 1,695 MHz and the same graph read 11 % slower
    (docs/lab-notes/clocks.md)."""
    if device.type != "cuda" or device in _NO_SM_CLOCK:
        return None
    try:
        return int(torch.cuda.clock_rate(device))
    except Exception:  # noqa: BLE001 - no nvidia-ml-py, no NVML: the clock is simply not known
        _NO_SM_CLOCK.add(device)
        return None


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def eager_us(step: Callable[[], object], device: torch.device, calls: int) -> float:
    """What an eager model sees: back-to-back calls, host-timed, one synchronize at the end."""
    synchronize(device)
    start = time.perf_counter()
    for _ in range(calls):
        step()
    synchronize(device)
    return (time.perf_counter() - start) * 1e6 / calls


HOST_CALLS = 8
"""Calls per host-clock sample: few enough that their launches do not fill the GPU's queue (about a thousand), which
would make the host wait for the GPU."""


def host_us(step: Callable[[], object], device: torch.device, calls: int = HOST_CALLS) -> float:
    """The host's own time per call: back-to-back calls timed before the synchronize, while the GPU is still behind
    (a call that waits for the GPU inside makes this its eager time). What the call costs a program whose host,
    not its GPU, is the bottleneck."""
    synchronize(device)
    start = time.perf_counter()
    for _ in range(calls):
        step()
    elapsed = time.perf_counter() - start
    synchronize(device)
    return elapsed * 1e6 / calls


QUEUED_CALLS = 8
"""Calls per queued-clock sample: few enough that their kernels stay within the GPU's launch queue."""
_SLEEP_CYCLES_PER_US: dict[torch.device, float] = {}


def sleep_cycles_per_us(device: torch.device) -> float:
    """How many cycles of ``torch.cuda._sleep`` last a µs on ``device`` now (timed once, with CUDA events, on the
    current device: :func:`queued_us` makes ``device`` current before it asks)."""
    if device not in _SLEEP_CYCLES_PER_US:
        cycles = 20_000_000
        torch.cuda._sleep(1_000)  # its first launch loads the kernel
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        _SLEEP_CYCLES_PER_US[device] = cycles / (start.elapsed_time(end) * 1e3)
    return _SLEEP_CYCLES_PER_US[device]


def queued_us(step: Callable[[], object], device: torch.device, host_per_call_us: float,
              calls: int = QUEUED_CALLS) -> float | None:
    """The GPU's time per call when the host has launched every call before the GPU reaches the first: the calls
    queued behind a wait on the GPU (``torch.cuda._sleep``) long enough for the host to launch them all, timed
    between CUDA events on the GPU. What the call costs a program whose host runs ahead of its GPU: the kernels and
    the gaps between them as eager launches leave them (a CUDA graph's replay, GPU/call, closes most of those gaps;
    code with many small kernels pays them). None where the GPU caught up with the host even after a wait four
    times as long (the sample would hold the host's time)."""
    with torch.cuda.device(device):
        return _queued_us(step, device, host_per_call_us, calls)


def _queued_us(step: Callable[[], object], device: torch.device, host_per_call_us: float,
               calls: int) -> float | None:
    head_start_us = 1.5 * calls * max(host_per_call_us, 1.0) + 1_000.0
    for _ in range(3):
        synchronize(device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(int(head_start_us * sleep_cycles_per_us(device)))
        start.record()
        for _ in range(calls):
            step()
        end.record()
        ahead = not start.query()  # the GPU still waiting when the last call was launched
        end.synchronize()
        if ahead:
            return start.elapsed_time(end) * 1e3 / calls
        head_start_us *= 2
    return None


def calls_for(target_us: float, per_call_us: float, cap: int) -> int:
    """How many calls make a loop of about ``target_us``."""
    return max(1, min(cap, math.ceil(target_us / max(per_call_us, 1e-3))))


_WARMUP_STREAMS: dict[torch.device, torch.cuda.Stream] = {}


def _warmup_stream(device: torch.device) -> torch.cuda.Stream:
    """One side stream per device for the warm-up before capture, reused: cuBLAS and cuDNN
    keep a workspace per stream they see, so a new stream per capture grows memory for good."""
    if device not in _WARMUP_STREAMS:
        _WARMUP_STREAMS[device] = torch.cuda.Stream(device)
    return _WARMUP_STREAMS[device]


def one_call(nodes: tuple[KernelInfo, ...], calls: int) -> tuple[KernelInfo, ...]:
    """The first call's part of a graph of ``calls`` identical calls (``()`` where they do not divide evenly)."""
    if not nodes or len(nodes) % calls:
        return ()
    return nodes[: len(nodes) // calls]


class GraphClock:
    """GPU time per call without host launch overhead: K calls captured in one CUDA graph, replayed back to back
    between two CUDA events; the events' span divided by the calls. It holds the gaps between one call's kernels and
    between two calls in the graph, not the host's launch work; K is sized so one replay holds at least
    ``GRAPH_TARGET_US`` of GPU work, ``MAX_CALLS_PER_GRAPH`` calls at most (a short graph would add its own launch gap
    to every few calls).

    Where capture is impossible (the backend or torch build refuses), falls back to CUDA
    events around a back-to-back loop, and says so in ``method``.
    """

    def __init__(self, step: Callable[[], object], device: torch.device, per_call_us: float) -> None:
        self.step = step
        self.device = device
        self.calls = calls_for(GRAPH_TARGET_US, per_call_us, MAX_CALLS_PER_GRAPH)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.method = "graph"
        self.capture_error = ""
        self.kernels: tuple[KernelInfo, ...] = ()  # one call's, read from the graph's nodes where that is possible
        try:
            self.graph = self._capture()
            self._fit()
        except Exception as exc:  # noqa: BLE001 - any capture failure means: use events
            self.release()
            self.method = "events"
            self.capture_error = f"{type(exc).__name__}: {exc}".splitlines()[0]
            torch.cuda.synchronize(device)

    def _fit(self) -> None:
        """Capture again with more calls where the estimate it was sized from (the eager clock: the host's time,
        far above the GPU's for a short call) left one replay short of ``GRAPH_TARGET_US`` of GPU work."""
        wanted = calls_for(GRAPH_TARGET_US, self.sample(), MAX_CALLS_PER_GRAPH)
        if wanted > self.calls:
            self.release()
            self.calls = wanted
            self.graph = self._capture()

    def _capture(self) -> torch.cuda.CUDAGraph:
        side = _warmup_stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):
            for _ in range(2):
                self.step()
        torch.cuda.current_stream(self.device).wait_stream(side)
        keep = graph_nodes.available()  # the template is kept only to read its nodes, then instantiated
        graph = torch.cuda.CUDAGraph(keep_graph=True) if keep else torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(self.calls):
                self.step()
        if keep:
            self.kernels = one_call(graph_nodes.kernels_of(graph), self.calls)
            graph.instantiate()
        graph.replay()
        torch.cuda.synchronize(self.device)
        return graph

    def sample(self, replays: int = 1) -> float:
        """Microseconds per call, from CUDA events around ``replays`` graph replays."""
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        if self.graph is not None:
            start.record()
            for _ in range(replays):
                self.graph.replay()
            end.record()
            calls = replays * self.calls
        else:
            start.record()
            for _ in range(replays * self.calls):
                self.step()
            end.record()
            calls = replays * self.calls
        end.synchronize()
        return start.elapsed_time(end) * 1000.0 / calls

    def release(self) -> None:
        if self.graph is not None:
            self.graph.reset()
            self.graph = None
