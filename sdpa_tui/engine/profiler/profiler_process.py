"""The profiler process: kernel capture apart from the long-lived timing engine.

    python -m sdpa_tui.engine.profiler.profiler_process FD DEVICE [--idle-exit-s S]

The timing engine starts it (``profiler_client.py``) with one end of a socketpair as ``FD``
and its fd 1 and fd 2 pointed at a capture file. It answers each :class:`CaptureKernels`
with a :class:`KernelCapture`: fresh inputs of the same workload, the same backend forced as
the engine forces it, a warm-up, a ``torch.profiler`` burst, the trace parsed. Every
profiler session (Kineto, CUPTI) and what it keeps lives here; the engine's CUDA graphs are
captured and replayed in a process that never loaded CUPTI (docs/lab-notes/gpu-measurements.md).

It exits after ``--idle-exit-s`` without a request, on :class:`Shutdown`, when the engine
goes away, and after a failed burst on a GPU (its CUDA context may be poisoned).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

from ...core.protocol.engine_commands import CaptureKernels, Shutdown
from ...core.protocol.records import KernelCapture, Ready
from ..measuring.cpu_allocator import settle_allocator
from ..parent_death import die_with_parent
from ..record_pipe import Channel, ChannelClosed
from .profiler_client import IDLE_EXIT_S

if TYPE_CHECKING:  # the annotation only: torch is imported inside the process, once it runs
    import torch

WARMUP_CALLS = 3
"""As the engine warms a backend up before timing it."""
FAULT_ENV = "SDPA_TUI_PROFILER_FAULT"
"""Fault injection for tests: ``exit`` dies at a request, ``hang`` never answers it,
``garbage`` answers with bytes that are not a record, ``startup-exit`` dies before Ready."""


def _inject(kind: str, channel: Channel) -> None:
    if kind == "exit":
        os._exit(9)
    if kind == "hang":
        while True:
            time.sleep(3600)
    if kind == "garbage":
        channel.conn.send_bytes(b"\x00 not a record")


def capture(request: CaptureKernels, device: torch.device) -> KernelCapture:
    """One burst for ``request``; an error becomes the record's ``error``, never an exception."""
    import torch

    from ..measuring.clocks import sm_clock_mhz
    from ..measuring.sdpa_call import Inputs, forced
    from . import profiling

    def failed(why: str) -> KernelCapture:
        return KernelCapture(request.config_id, request.backend, (), (), None, time.time(), error=why)

    inputs = None
    try:
        inputs = Inputs.make(request.workload, device)
        step = inputs.step()
        with forced((request.backend,)):
            for _ in range(WARMUP_CALLS):
                step()
            burst = profiling.burst(step, device, request.calls)
            sm_mhz = sm_clock_mhz(device)
    except torch.OutOfMemoryError as exc:
        return failed(f"out of memory in the profiler process: {str(exc).splitlines()[0]}")
    except RuntimeError as exc:
        return failed(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
    finally:
        del inputs
        if device.type == "cuda":
            torch.cuda.empty_cache()  # leave the device's memory to the timing engine
    error = "" if burst.kernels else "the profiler saw no activity inside the calls"
    if request.trace_path:
        try:
            with open(request.trace_path, "w", encoding="utf-8") as f:
                json.dump(burst.trace, f)
        except OSError as exc:
            error = f"trace not written: {exc.strerror or exc}"
    return KernelCapture(request.config_id, request.backend, burst.kernels, burst.kernel_us, None, time.time(),
                         error=error, sm_mhz=sm_mhz)


def serve(channel: Channel, device_name: str, idle_exit_s: float) -> int:
    import torch

    from ..measuring.environment import describe
    from . import profiling

    device = torch.device(device_name)
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.cuda.init()
    else:  # the timing engine's thread rule: the kernel clock times the calls the eager clock times
        from ..measuring import cpu_threads

        cpu_threads.leave_a_core()
    try:
        # Kineto's first session here, not in the first burst: CUPTI's start on a GPU; on the CPU the first burst is
        # the only one a slow call's `report` reads (docs/lab-notes/cpu-kernel-clock.md)
        profiling.warm(device)
    except RuntimeError:
        pass  # the first burst tries again and says what failed
    fault = os.environ.get(FAULT_ENV, "")
    if fault == "startup-exit":
        os._exit(9)
    channel.send(Ready(describe(device, ("profiler process",))))
    while channel.poll(idle_exit_s):
        record = channel.receive()
        if isinstance(record, Shutdown):
            return 0
        if not isinstance(record, CaptureKernels):
            continue
        if fault:
            _inject(fault, channel)
            continue
        reply = capture(record, device)
        channel.send(reply)
        if reply.error and not reply.kernels and device.type == "cuda":
            return 3  # a fresh process for the next burst: this context may be poisoned
    return 0  # idle: the engine starts a new one when a burst is due


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sdpa_tui.engine.profiler.profiler_process",
                                     description="kernel capture for one sdpa-tui engine (started by it)")
    parser.add_argument("fd", type=int, help="this end of the engine's socketpair")
    parser.add_argument("device", help="cpu or cuda:N, as the engine resolved it")
    parser.add_argument("--idle-exit-s", type=float, default=IDLE_EXIT_S)
    parser.add_argument("--parent", type=int, help="the engine's pid (default: this process's parent now)")
    args = parser.parse_args(argv)
    settle_allocator()  # before torch: the timing engine's regime, so both clocks time a call alike
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the engine decides when we stop
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    parent = args.parent or os.getppid()
    die_with_parent()
    if os.getppid() != parent:  # the engine died before PR_SET_PDEATHSIG was armed (while this interpreter started)
        return 0
    try:
        channel = Channel(Connection(args.fd))
    except OSError as exc:
        print(f"profiler process: fd {args.fd} is not a connection: {exc}", file=sys.stderr)
        return 2
    try:
        return serve(channel, args.device, args.idle_exit_s)
    except ChannelClosed:
        return 0  # the engine is gone


if __name__ == "__main__":
    sys.exit(main())
