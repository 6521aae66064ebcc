"""Kernel names from short torch.profiler bursts inside the watched program (CUDA only).

A profiler must be started on the thread that makes the calls (one started elsewhere
records nothing of that thread), so the burst starts and stops inside the SDPA wrapper or a
compiled function's hooks; during a burst each SDPA call runs in a ``record_function`` range
named after its signature, and the CUDA kernels launched inside a range are that signature's
(read from the Chrome trace on the probe's background thread, as the engine reads its own).
A burst is due when a new CUDA signature (or a compiled function's second call) appears, at
most ``NEW_SIGNATURE_BURSTS`` times and ``NEW_SIGNATURE_GAP_S`` apart, so that a short program
still shows its kernels; and on the schedule below. Kineto's start/stop lines on fd 2 are kept
off the program's stderr.
"""

from __future__ import annotations

import gc
import json
import os
import tempfile
import time

import torch

from ..core.kernel_names import ATTENTION_FAMILIES, identify
from ..core.trace import kernels_in_ranges

RANGE_PREFIX = "sdpa-tui#"
COMPILED_PREFIX = "Torch-Compiled Region"
SCHEDULE_S = (3.0, 30.0)
"""The first bursts come this long after the first CUDA call; then one every ``EVERY_S``."""
EVERY_S = 300.0
BURST_S = 0.5
BURST_CALLS = 200
NEW_SIGNATURE_GAP_S = 0.5
NEW_SIGNATURE_BURSTS = 8


class KernelBursts:
    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled  # off: never due (benchmarks of the wrapper's steady state)
        self.due = False
        self.active = False
        self.calls = 0
        self._profiler = None
        self._started = 0.0
        self._origin: float | None = None
        self._done = 0
        self._ended = float("-inf")
        self._for_new = 0
        self._uncovered = False  # a new signature appeared while no burst could start
        self.finished: list = []  # stopped profilers, read on the background thread

    def arm(self) -> None:
        """The first CUDA call: the schedule starts now."""
        if self._origin is None and self.enabled:
            self._origin = time.monotonic()

    def signature_seen(self) -> None:
        """A new CUDA signature (calling thread): a burst is due unless one runs or one just ended."""
        self.arm()
        if not self.enabled or self.active or self._for_new >= NEW_SIGNATURE_BURSTS:
            return
        if time.monotonic() - self._ended >= NEW_SIGNATURE_GAP_S:
            self.due, self._uncovered = True, False
            self._for_new += 1
        else:
            self._uncovered = True

    def next_due(self) -> float | None:
        if self._origin is None:
            return None
        offset = SCHEDULE_S[self._done] if self._done < len(SCHEDULE_S) else SCHEDULE_S[-1] + EVERY_S * (self._done - 1)
        return self._origin + offset

    def poll(self) -> bool:
        """Background thread: is a burst due? (Only sets a flag; the wrapper starts it.)"""
        if not self.enabled:
            return False
        due = self.next_due()
        now = time.monotonic()
        if due is not None and not self.active and now >= due:
            self.due = True
            self._done += 1
        elif (self._uncovered and not self.active and self._for_new < NEW_SIGNATURE_BURSTS
              and now - self._ended >= NEW_SIGNATURE_GAP_S):
            self.due, self._uncovered = True, False
            self._for_new += 1
        return self.due

    def start(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        self.due = False
        profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        try:
            _quiet_fd2(profiler.start)
        except Exception:  # noqa: BLE001 - a profiler that cannot start costs the kernels, not the program
            return
        self._profiler, self._started, self.calls, self.active = profiler, time.monotonic(), 0, True

    def should_stop(self) -> bool:
        return self.active and (self.calls >= BURST_CALLS or time.monotonic() - self._started >= BURST_S)

    def stop(self) -> None:
        profiler, self._profiler, self.active = self._profiler, None, False
        self._ended = time.monotonic()
        if profiler is None:
            return
        try:
            torch.cuda.synchronize()
            _quiet_fd2(profiler.stop)
        except Exception:  # noqa: BLE001
            return
        self.finished.append(profiler)


def _quiet_fd2(fn) -> None:
    """Kineto writes ``profiler_start``-style lines to fd 2: keep them out of the program's stderr."""
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        others = [line for line in sink.read().decode(errors="replace").splitlines()
                  if line.strip() and not _is_profiler_noise(line)]
    if others:
        os.write(2, ("\n".join(others) + "\n").encode())


def _is_profiler_noise(line: str) -> bool:
    return any(word in line for word in ("profiler_start", "profiler_stop", "USDT", "CUPTI", "Kineto", "kineto"))


def read_profile(profiler) -> tuple[dict[int, list[str]], list[str]]:
    """Signature index → kernel names under its ranges; attention kernels under compiled regions."""
    fd, path = tempfile.mkstemp(prefix="sdpa-tui-watch-", suffix=".json")
    os.close(fd)
    try:
        profiler.export_chrome_trace(path)
        with open(path, encoding="utf-8") as f:
            trace = json.load(f)
    finally:
        os.unlink(path)
    del profiler
    gc.collect()  # the profile object sits in a reference cycle holding the whole Kineto result
    per_signature: dict[int, list[str]] = {}
    for name, kernels in kernels_in_ranges(trace, RANGE_PREFIX).items():
        try:
            per_signature[int(name[len(RANGE_PREFIX):])] = kernels
        except ValueError:
            continue
    compiled = [k for names in kernels_in_ranges(trace, COMPILED_PREFIX).values() for k in names
                if identify(k).family in ATTENTION_FAMILIES]
    return per_signature, list(dict.fromkeys(compiled))
