"""Two of the three clocks: GPU per call (CUDA graph replay) and eager per call (host loop).

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
