"""Kernel names from short torch.profiler bursts inside the watched program (CUDA only).

A profiler must be started on the thread that makes the calls (one started elsewhere
records nothing of that thread), so the burst starts and stops inside the SDPA wrapper or a
compiled module's hooks; during a burst each SDPA call runs in a ``record_function`` range
named after its signature, and the CUDA kernels under a range are that signature's. The
events are read on the probe's background thread. Kineto's start/stop lines on fd 2 are kept
off the program's stderr.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterable

import torch
from torch.autograd import DeviceType

from ..core.kernel_names import ATTENTION_FAMILIES, identify

RANGE_PREFIX = "sdpa-tui#"
COMPILED_PREFIX = "Torch-Compiled Region"
SCHEDULE_S = (3.0, 30.0)
"""The first bursts come this long after the first CUDA call; then one every ``EVERY_S``."""
EVERY_S = 300.0
BURST_S = 0.5
BURST_CALLS = 200


class KernelBursts:
    def __init__(self) -> None:
        self.due = False
        self.active = False
        self.calls = 0
        self._profiler = None
        self._started = 0.0
        self._origin: float | None = None
        self._done = 0
        self.finished: list = []  # stopped profilers, read on the background thread

    def arm(self) -> None:
        """The first CUDA call: the schedule starts now."""
        if self._origin is None:
            self._origin = time.monotonic()

    def next_due(self) -> float | None:
        if self._origin is None:
            return None
        offset = SCHEDULE_S[self._done] if self._done < len(SCHEDULE_S) else SCHEDULE_S[-1] + EVERY_S * (self._done - 1)
        return self._origin + offset

    def poll(self) -> bool:
        """Background thread: is a burst due? (Only sets a flag; the wrapper starts it.)"""
        due = self.next_due()
        if due is not None and not self.active and time.monotonic() >= due:
            self.due = True
        return self.due

    def start(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        self.due = False
        self._done += 1
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


def _device_kernels(event) -> Iterable[str]:
    for kernel in getattr(event, "kernels", ()) or ():
        yield kernel.name
    for child in getattr(event, "cpu_children", ()) or ():
        if getattr(child, "device_type", None) == DeviceType.CUDA:
            yield child.name
        else:
            yield from _device_kernels(child)


def read_profile(profiler) -> tuple[dict[int, list[str]], list[str]]:
    """Signature index → kernel names under its ranges; attention kernels under compiled regions."""
    per_signature: dict[int, list[str]] = {}
    compiled: list[str] = []
    for event in profiler.events():
        name = event.name
        if name.startswith(RANGE_PREFIX):
            try:
                index = int(name[len(RANGE_PREFIX):])
            except ValueError:
                continue
            names = per_signature.setdefault(index, [])
            names.extend(k for k in _device_kernels(event) if k not in names)
        elif name.startswith(COMPILED_PREFIX):
            compiled.extend(
                k for k in _device_kernels(event) if identify(k).family in ATTENTION_FAMILIES and k not in compiled
            )
    return per_signature, compiled
