"""The kernel clock and kernel identity: a short torch.profiler (Kineto/CUPTI) burst.

Runs only in the profiler process (``profiler_process.py``), never in the timing engine: a
CUDA graph captured in a process where CUPTI was loaded keeps host memory on every replay
(docs/lab-notes/gpu-measurements.md, "Engine host memory")."""

from __future__ import annotations

import gc
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from ...core.protocol.records import KernelInfo
from ...core.traces import trace as trace_parser

CALL_ANNOTATION = "sdpa_tui.call"


@dataclass(frozen=True)
class Burst:
    kernels: tuple[KernelInfo, ...]  # every activity of one representative call
    kernel_us: tuple[float, ...]  # per call: the sum of its activities' durations
    trace: dict  # the Chrome trace, as Perfetto opens it


def burst(step: Callable[[], object], device: torch.device, calls: int = 5) -> Burst:
    """Profile ``calls`` calls, each inside a ``sdpa_tui.call`` annotation, and parse the trace."""
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        for _ in range(calls):
            with record_function(CALL_ANNOTATION):
                step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    trace = _chrome_trace(prof)
    # The profile object sits in a reference cycle (its action map holds its own bound
    # methods) and holds the whole Kineto result: left to the collector's next full pass,
    # hours away in a process that imported torch, every burst would stay in memory.
    del prof
    gc.collect()
    per_call = [c for c in trace_parser.calls_of(trace, CALL_ANNOTATION) if c]
    if not per_call:
        return Burst((), (), trace)
    sums = tuple(sum(k.duration_us for k in call) for call in per_call)
    # The representative call: the one whose kernel sum is the median.
    order = sorted(range(len(per_call)), key=lambda i: sums[i])
    representative = per_call[order[len(order) // 2]]
    return Burst(tuple(representative), sums, trace)


def warm(device: torch.device) -> None:
    """One profiled call of a tiny op, so that the first real burst does not pay for Kineto's and CUPTI's start
    (seconds on a GPU); the profiler process does it before it says Ready."""
    x = torch.zeros(8, device=device)
    burst(lambda: x.add_(1), device, calls=1)


def _chrome_trace(prof: profile) -> dict:
    fd, path = tempfile.mkstemp(prefix="sdpa-tui-", suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    finally:
        os.unlink(path)
