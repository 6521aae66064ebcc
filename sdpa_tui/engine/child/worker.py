"""The engine process's entry point (started with the spawn method; imports torch itself).

The parent process never imports torch nor initialises CUDA: everything torch does
happens here, with fd 1 and fd 2 captured before torch is imported.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from multiprocessing.connection import Connection

from ...core.protocol.records import EngineError, Log
from ..measuring.cpu_allocator import settle_allocator
from ..output_capture import OutputCapture
from ..parent_death import die_with_parent
from ..profiler.profiler_client import start_early
from ..record_pipe import Channel, ChannelClosed
from .cuda_prewarm import Prewarm
from .startup_times import StartupClock

EXIT_STICKY_CUDA = 3
EXIT_STARTUP = 4
EXIT_RECYCLE = 5


def main(conn: Connection, device_request: str, spawned_at: float | None = None) -> None:
    settle_allocator()  # before torch: the profiler process's regime, so both clocks time a call alike
    startup = StartupClock(spawned_at)
    startup.mark("interpreter")
    # The UI decides when we stop: Ctrl-C and a hang-up reach the whole process group, and
    # the UI answers them by sending Shutdown (or, if it dies, PR_SET_PDEATHSIG ends us).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    parent = os.getppid()
    die_with_parent()
    if os.getppid() != parent:  # the UI died before PR_SET_PDEATHSIG was armed
        sys.exit(0)
    capture = OutputCapture()
    capture.start()
    channel = Channel(conn)
    code = 0
    # cuda:N is then NVML's GPU N (both in PCI bus order), so the GPU overview matches.
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    profiler = start_early(device_request)
    prewarm = Prewarm(device_request)  # the GPU's context and cuDNN's libraries, beside torch's import
    prewarm.start()
    try:
        from .measuring_loop import Engine  # imports torch

        startup.mark("import_torch")
        channel.send(Log(prewarm.report()))

        # torch leaves ~500k objects that live as long as the process; frozen, out of the
        # collector's sight, a full collection (one per profiler burst) takes well under a
        # millisecond instead of ~100 ms (measured on a 2-core CPU machine).
        gc.freeze()
        engine = Engine(channel, device_request, capture, startup, profiler)
        engine.run()
        code = EXIT_RECYCLE if engine.recycled else 0
    except ChannelClosed:
        pass  # the UI is gone: exit quietly, freeing the GPU
    except Exception as exc:  # noqa: BLE001 - report anything, then exit
        sticky = type(exc).__name__ == "StickyCudaError"  # runner may not have imported
        message = f"CUDA context poisoned: {exc}" if sticky else f"{type(exc).__name__}: {exc}"
        code = EXIT_STICKY_CUDA if sticky else EXIT_STARTUP
        _send_quietly(channel, EngineError(message, fatal=True))
    finally:
        if profiler is not None:
            profiler.close()  # the engine closed it unless it failed to start
    for line in capture.read_lines():
        _send_quietly(channel, Log(line))
    sys.exit(code)


def _send_quietly(channel: Channel, record: object) -> None:
    try:
        channel.send(record)
    except ChannelClosed:
        pass
