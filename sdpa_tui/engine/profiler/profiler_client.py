"""The timing engine's side of its profiler process (``profiler_process.py``). Imports no torch.

One profiler process at a time, started when a burst is first due and kept while bursts
come (it exits by itself after a while without one, and is replaced after ``max_bursts`` so
that what Kineto keeps per session stays bounded). Its fd 1 and fd 2 go to a capture file
whose lines the engine forwards as ``Log`` records. Whatever goes wrong with it (it dies,
hangs, answers garbage, never starts) is raised as :class:`ProfilerFailed` with one line
that says what happened; the process is then stopped and the next burst starts a new one.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from multiprocessing.connection import Connection
from typing import NoReturn

from ...core.installation import IMPORT_ROOT
from ...core.protocol.engine_commands import CaptureKernels, Shutdown
from ...core.protocol.records import Environment, KernelCapture, Ready
from ...core.protocol.wire_format import ProtocolError
from ..output_capture import OutputCapture
from ..record_pipe import Channel, ChannelClosed

START_TIMEOUT_S = 120.0
"""From start to Ready: a Python interpreter, ``import torch`` and a CUDA context."""
MAX_BURSTS = 200
IDLE_EXIT_S = 120.0
"""The process leaves by itself after this long without a request (the engine may be paused
or gone); the client starts a new one rather than reuse one idle for 5/6 of it."""


class ProfilerFailed(RuntimeError):
    """The profiler process could not give a burst; the message says why, in one line."""


def burst_timeout_s(calls: int, per_call_us: float) -> float:
    """Time allowed for one burst: a fixed allowance for the profiler's own start-up and the
    trace's parsing, plus the calls (warm-up included) at twenty times their timed length."""
    return 60.0 + 20.0 * (calls + 3) * per_call_us / 1e6


def _how_it_ended(code: int | None) -> str:
    if code is None:
        return "is still running"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


class ProfilerClient:
    def __init__(self, device: str, idle_exit_s: float = IDLE_EXIT_S, start_timeout_s: float = START_TIMEOUT_S,
                 max_bursts: int = MAX_BURSTS) -> None:
        self.device = device
        self.idle_exit_s = idle_exit_s
        self.reuse_for_s = idle_exit_s * 5 / 6
        self.start_timeout_s = start_timeout_s
        self.max_bursts = max_bursts
        self.output = OutputCapture()
        self._process: subprocess.Popen | None = None
        self._channel: Channel | None = None
        self._started_at = 0.0
        self._ready = False
        self._bursts = 0
        self._last_used = 0.0
        self._stashed_lines: list[str] = []
        self.starts = 0  # processes started so far
        self.environment: Environment | None = None  # as the process described itself when ready

    @property
    def starting(self) -> bool:
        """Its process runs and has not yet said Ready (as last polled): its interpreter, ``import torch`` and, on a
        GPU, CUPTI's start take CPU beside the engine."""
        return self._process is not None and not self._ready and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process and self._process.poll() is None else None

    # -- start ---------------------------------------------------------------------------
    def _start(self) -> None:
        mine, theirs = socket.socketpair()
        command = [sys.executable, "-m", "sdpa_tui.engine.profiler.profiler_process", str(theirs.fileno()), self.device,
                   "--idle-exit-s", str(self.idle_exit_s), "--parent", str(os.getpid())]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (IMPORT_ROOT, env.get("PYTHONPATH", "")) if p)
        out = self.output.fileno()
        try:
            self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                             pass_fds=(theirs.fileno(),), env=env, close_fds=True)
        finally:
            theirs.close()
        self._channel = Channel(Connection(mine.detach()))
        self._started_at = time.monotonic()
        self._ready = False
        self._bursts = 0
        self.starts += 1

    def poll_ready(self) -> bool:
        """Start the process if there is none; True once it said Ready. Never waits."""
        if self._process is not None and self._ready and time.monotonic() - self._last_used > self.reuse_for_s:
            self.close()  # it is about to leave by itself: never race its idle exit
        if self._process is not None and self._ready and self._process.poll() is not None:
            self.close()  # it left between bursts (after a failed one on a GPU): a new one
        if self._process is None:
            self._start()
        if not self._ready:
            self._receive_ready(0.0)
        if not self._ready and time.monotonic() - self._started_at > self.start_timeout_s:
            self._fail(f"was not ready within {self.start_timeout_s:.0f} s")
        return self._ready

    def reap(self) -> None:
        """A process that left by itself (its idle exit, while the engine is paused or between bursts) is
        waited for now, not left a zombie until the next burst."""
        if self._process is not None and self._ready and self._process.poll() is not None:
            self.close()

    def wait_ready(self) -> None:
        while not self.poll_ready():
            self._receive_ready(0.1)

    def _receive_ready(self, timeout: float) -> None:
        for record in self._receive(timeout):
            if isinstance(record, Ready):
                self._ready, self.environment = True, record.environment
                self._last_used = time.monotonic()

    # -- a burst -------------------------------------------------------------------------
    def capture(self, request: CaptureKernels, timeout_s: float) -> KernelCapture:
        """One burst; waits for the process to be ready first. Raises ProfilerFailed."""
        self.wait_ready()
        channel = self._channel
        if channel is None:
            self._fail("was not started")
        try:
            channel.send(request)
        except ChannelClosed:
            self._fail("was gone when asked for a burst")
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail(f"did not answer within {timeout_s:.0f} s")
            for record in self._receive(min(left, 0.5)):
                if isinstance(record, KernelCapture) and (record.config_id, record.backend) == (
                        request.config_id, request.backend):
                    self._bursts += 1
                    self._last_used = time.monotonic()
                    if self._bursts >= self.max_bursts:
                        self.close()  # what Kineto keeps per session stays bounded
                    return record

    def _receive(self, timeout: float) -> list:
        """Records waiting (up to ``timeout`` for the first); ProfilerFailed when the process died
        or sent something that is not a record."""
        process, channel = self._process, self._channel
        if process is None or channel is None:
            self._fail("was not started")
        try:
            records = channel.receive_all(timeout)
        except ChannelClosed:
            records = None
        except ProtocolError as exc:
            self._fail(f"sent something that is not a record ({exc})")
        if not records and process.poll() is not None:
            self._fail(_how_it_ended(process.returncode))
        if records is None:  # the socket closed, the process not yet reaped
            try:
                code = process.wait(5.0)
            except subprocess.TimeoutExpired:
                code = None
            self._fail("closed its connection" if code is None else _how_it_ended(code))
        return records

    def _fail(self, what: str) -> NoReturn:
        self.close(timeout=0.5)
        lines = self.output.read_lines()
        self._stashed_lines += lines
        last = f"; its last line: {lines[-1]}" if lines else ""
        raise ProfilerFailed(f"the profiler process {what}{last}")

    # -- output and stop -----------------------------------------------------------------
    def read_lines(self) -> list[str]:
        """What the process wrote to fd 1 and fd 2 since the last call (for Log records)."""
        stashed, self._stashed_lines = self._stashed_lines, []
        return stashed + self.output.read_lines()

    def close(self, timeout: float = 2.0) -> None:
        """Ask the process to exit; kill it if it does not within ``timeout``."""
        process, channel = self._process, self._channel
        self._process, self._channel, self._ready = None, None, False
        if process is None:
            return
        if channel is not None:
            try:
                channel.send(Shutdown())
            except ChannelClosed:
                pass
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5.0)
        if channel is not None:
            channel.close()


def start_early(device_request: str) -> ProfilerClient | None:
    """For a GPU request on a machine with an NVIDIA driver: a profiler process started now, before the engine
    imports torch, so that its interpreter, torch and CUPTI start beside the engine's own (the kernels are named
    seconds sooner). None for the CPU, where the first number comes first (two cores), or when it cannot start."""
    if device_request == "cpu" or not os.path.exists("/dev/nvidiactl"):
        return None
    client = ProfilerClient("cuda:0" if device_request in ("auto", "cuda") else device_request)
    try:
        client.poll_ready()
    except (ProfilerFailed, OSError):
        client.close()
        return None
    return client
