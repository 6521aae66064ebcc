"""Each call's kernels and kernel time, from short torch.profiler windows ("bursts") inside the watched program.

A profiler must be started on the thread that makes the calls (one started elsewhere
records nothing of that thread), so a window starts and stops inside the SDPA wrapper or a
compiled graph's wrapper; during a window each SDPA call runs in a ``record_function`` range
named after its signature, and the GPU work launched inside a range is that call's. A stopped
window is exported at once by the probe's background thread, or by the calling thread when the
next window is due first (no window starts before the last is exported), and read in a helper
process (``window_files.py``).

When: a new CUDA signature makes a window due at once (unless the last ended too recently). A
signature with fewer than ``profile_readings.WANTED_SAMPLES`` profiled calls is *wanted*: its
next call starts a window when the last one ended long enough ago (``COVERAGE_GAP``: at least
``MIN_GAP_S``, and four times what the last window cost, so coverage profiles at most a fifth of
the time); every window ends once the signatures in it have their samples (at least ``MIN_BURST_CALLS``
calls), or once those short of them have not been called for as many calls (an evaluation's few calls every so
many training steps: they stay wanted). A window spent on first calls (plans built: seconds) with too few other
calls is followed at once by another. Calls of signatures already covered never start one. The schedule
(``SCHEDULE_S``, then every ``EVERY_S``) re-samples the covered signatures for drift, in long programs only.

The windows' cost (``Captures.cost_s``: starts, profiled time, stops, exports) is held under ``BUDGET`` of the
process's time: a window other than a new signature's first ones (and the one that follows a window spent on
first calls) is not started while the cost so far is over that share; it waits until it is not. Kineto's
start/stop lines on fd 2 are kept off the program's stderr.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
import warnings

import torch

from ....core.calls.watched_calls import Captures
from ....core.traces.window_reading import WindowReading
from .cupti_detach import DETACH_AFTER_S, CuptiDetach
from .profile_readings import WANTED_SAMPLES
from .window_files import export, log, read

SCHEDULE_S = (30.0,)
"""The schedule's first window comes this long after the first CUDA call, then one every ``EVERY_S``: they
re-sample signatures already covered (drift). A short program needs none: each signature's own windows sample it
(until 2026-11-27 a window at 3 s came too, the dearest of a 10-s program's: 64 calls)."""
EVERY_S = 300.0
BUDGET = 0.02
"""The windows watch may skip (the schedule's; coverage beyond a signature's first windows) start only while the
windows' cost so far is at most this share of the process's time."""
BURST_S = 0.5
BURST_CALLS = 64
MIN_BURST_CALLS = WANTED_SAMPLES + 1
"""A burst goes on past ``BURST_S`` until this many calls ran in it (a first call may spend the half second
building its plan), but never past ``MAX_BURST_S``; one that covers its signatures ends once it has this many (a
signature's first call and its samples; a training call's backward is waited for: ``window_backwards.py``). It was
16 until 2026-11-27: two steps of an 8-layer model, each window's stop dearer by a step of events."""
MAX_BURST_S = 3.0
MIN_GAP_S = 0.5
QUICK_GAP_S = 0.25
QUICK_BURSTS = 16
COVERAGE_GAP = 4.0
"""A coverage burst waits this many times the last burst's cost (profiled time and stop) after it."""


class KernelBursts:
    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled  # off: never due (benchmarks of the wrapper's steady state)
        self.due = False
        self.active = False
        self._starting = False
        self._follow_up = False  # the last window was spent on first calls: the next may start without a gap
        self.calls = 0
        self.captures = Captures()
        self._profiler = None
        self._started = 0.0
        self._origin: float | None = None
        self._born = time.monotonic()  # the budget's clock: the process's time since the probe was installed
        self._done = 0
        self._ended = float("-inf")
        self._last_cost = 0.0
        self._quick = 0
        self.finished: list = []  # stopped profilers, not exported yet
        self.exported: list[str] = []  # their traces, to be read by the background thread
        self.stopped = threading.Event()  # wakes the background thread to export a stopped window at once
        self._export_lock = threading.Lock()
        self.cupti = CuptiDetach()
        self.ending = threading.Event()  # the process is ending: windows are read in it (``window_files.read``)

    def disable(self) -> None:
        """No window is ever due again (a block of the Python API has ended; its probe only counts)."""
        self.enabled = self.due = self.scheduled_due = False

    def arm(self) -> None:
        """The first CUDA call: the schedule starts now."""
        if self._origin is None and self.enabled:
            self._origin = time.monotonic()

    def signature_seen(self) -> None:
        """A new signature or compiled graph (calling thread): a burst is due unless one runs or the last ended
        too recently (then the signature stays wanted, and one of its later calls starts it). The first
        ``QUICK_BURSTS`` new signatures wait only ``QUICK_GAP_S``, so a short program is covered."""
        self.arm()
        self.cover(never_profiled=True)

    def cover(self, never_profiled: bool) -> None:
        """Make a burst due for a wanted signature if the gap allows (a short one for a never-profiled one), and the
        budget unless no window sampled it yet or the last was spent on first calls."""
        if self._follow_up and self._gap_passed(0.0):
            self.due = True
        elif never_profiled and self._quick < QUICK_BURSTS and self._gap_passed(QUICK_GAP_S):
            self.due = True
            self._quick += 1
        elif self.coverage_open() and (never_profiled or self.within_budget()):
            self.due = True

    def coverage_open(self) -> bool:
        """May a wanted signature's call start a burst now?"""
        return self._gap_passed(max(MIN_GAP_S, COVERAGE_GAP * self._last_cost))

    def within_budget(self) -> bool:
        """Have the windows so far cost at most ``BUDGET`` of the process's time?"""
        return self.captures.cost_s <= BUDGET * (time.monotonic() - self._born)

    def budget_reopens_in(self, now: float, running_s: float = 0.0) -> float:
        """Seconds from ``now`` until the windows so far (and ``running_s`` more, a window stopping) cost at most
        ``BUDGET`` of the process's time (0 or less: they do now)."""
        return (self.captures.cost_s + running_s) / BUDGET - (now - self._born)

    def _gap_passed(self, gap: float) -> bool:
        now = time.monotonic()
        return (self.enabled and not self.active and not self._starting and now - self._ended >= gap
                and not self.cupti.guarding(now))

    def next_due(self) -> float | None:
        if self._origin is None:
            return None
        done, first = self._done, len(SCHEDULE_S)
        offset = SCHEDULE_S[done] if done < first else SCHEDULE_S[-1] + EVERY_S * (done - first + 1)
        return self._origin + offset

    def poll(self) -> bool:
        """Background thread: is a scheduled burst due? (Only sets a flag; the wrapper starts it.) One the budget holds
        back stays pending until the windows' cost is within it."""
        if not self.enabled:
            return False
        due = self.next_due()
        if due is not None and time.monotonic() >= due and self._gap_passed(0.0) and self.within_budget():
            self.due = True
            self._done += 1
        return self.due

    def start(self, record_shapes: bool = True) -> None:
        """Start the due window, the last one exported first if the background thread has not yet.
        ``record_shapes``: the ops' input shapes, which only a compiled graph's calls are matched by (recording
        them costs every op in the window, and makes the trace to stop, export and read larger)."""
        from torch.profiler import ProfilerActivity, profile

        if self.cupti.guarding(time.monotonic()):  # due from before a stop that detached CUPTI: after the guard
            return
        if self.finished:  # not exported yet: now, on this thread (a short program's new signature can't wait)
            self.export_all()
        self.due, self._follow_up = False, False
        cuda = torch.cuda.is_initialized()
        activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA] if cuda else [ProfilerActivity.CPU]
        profiler = profile(activities=activities, record_shapes=record_shapes)
        starting = time.monotonic()
        if cuda:
            self.cupti.before_start()
        self._starting = True  # the first start attaches CUPTI (seconds on the H100): no schedule falls due meanwhile
        try:
            log("start", quiet_fd2(lambda: _start(profiler)))
        except Exception as exc:  # noqa: BLE001 - a profiler that cannot start costs the kernels, not the program
            log(f"start failed: {exc!r}")
            self.captures.failed("start", exc)
            self._ended = time.monotonic()
            return
        finally:
            self._starting = False
            self.captures.start_s += time.monotonic() - starting
        self._profiler, self._started, self.calls, self.active = profiler, time.monotonic(), 0, True

    def should_stop(self, covered: bool = False) -> bool:
        """``covered``: every signature that ran in this burst now has its samples (in this burst or before), or
        those short of them have gone by (``Probe.gone_by``), so the burst ends after ``MIN_BURST_CALLS`` calls, not
        ``BURST_S`` (the schedule's too: a drift check needs no more calls than a coverage one)."""
        if not self.active:
            return False
        on = time.monotonic() - self._started
        enough = self.calls >= MIN_BURST_CALLS
        return self.calls >= BURST_CALLS or on >= MAX_BURST_S or enough and (on >= BURST_S or covered)

    def stop(self, final: bool = False, wanted_left: bool = False, sampled: int = MIN_BURST_CALLS) -> None:
        """``final``: the program's last window (CUPTI is not detached after it); ``wanted_left``: a signature that
        ran in it still wants samples (CUPTI is not detached after it either while a window for it may come within
        ``DETACH_AFTER_S``: a follow-up, or one the budget allows by then). ``sampled``: its calls that were not a
        signature's first; a window spent on first calls (plans built, seconds) is followed at once by another if
        samples are wanted."""
        self._follow_up = wanted_left and sampled < MIN_BURST_CALLS
        profiler, self._profiler, self.active = self._profiler, None, False
        stopping = time.monotonic()
        if profiler is None:
            self._ended = stopping
            return
        try:
            detach = ""
            if torch.cuda.is_initialized():  # the profiler's stop waits for the GPU itself (autograd.profiler)
                due = self.next_due()
                soon = wanted_left and (self._follow_up or self.budget_reopens_in(
                    stopping, stopping - self._started) < DETACH_AFTER_S)
                if self.cupti.before_stop(None if due is None else due - stopping, final, soon):
                    detach = ", CUPTI detached"
                    self.captures.detached += 1
            log(f"stop after {self.calls} calls, {stopping - self._started:.3f} s{detach}", quiet_fd2(profiler.stop))
        except Exception as exc:  # noqa: BLE001
            log(f"stop failed: {exc!r}")
            self.captures.failed("stop", exc)
            return
        finally:
            self._ended = time.monotonic()
            self._last_cost = min(stopping - self._started, BURST_S) + self._ended - stopping
            self.captures.count += 1
            self.captures.profiled_s += stopping - self._started
            self.captures.stop_s += self._ended - stopping
        self.finished.append(profiler)
        self.stopped.set()

    def export_all(self) -> None:
        """Export every stopped window (either thread: the background one at once, the calling one when a
        window is due before that happened). Kineto holds the GIL while it writes the trace: counted in the cost."""
        with self._export_lock:
            if not self.finished:
                return
            t0 = time.monotonic()
            try:
                self._export_finished()
            finally:
                self.captures.export_s += time.monotonic() - t0

    def _export_finished(self) -> None:
        while self.finished:
            profiler = self.finished[0]
            try:
                self.exported.append(export(profiler))
            except Exception as exc:  # noqa: BLE001 - that window is lost, said in the report
                self.captures.failed("export", exc)
            finally:
                self.finished.pop(0)

    def read_next(self, in_process: bool = False) -> WindowReading:
        """Background thread (or the process's end, ``in_process``): read the oldest exported window
        (``window_files``); in this process once ``ending`` is set, a helper under way stopped."""
        return read(self.exported.pop(0), in_process, self.ending)


def _start(profiler) -> None:
    """Torch before 2.12 warns on the program's stderr that "Profiler clears events at the end of each cycle" at
    a profiler's first start, cycles or not (pytorch#180387). ``acc_events=True`` would silence it, but makes every
    stop turn the whole trace into Python events on the calling thread (seconds on the H100): the warning is
    ignored instead, for this start only."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Warning: Profiler clears events", category=UserWarning)
        profiler.start()


def quiet_fd2(fn) -> list[str]:
    """Kineto writes ``profiler_start``-style lines to fd 2: keep them out of the program's stderr (they are
    returned)."""
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        lines = [line for line in sink.read().decode(errors="replace").splitlines() if line.strip()]
    others = [line for line in lines if not _is_profiler_noise(line)]
    if others:
        os.write(2, ("\n".join(others) + "\n").encode())
    return [line for line in lines if _is_profiler_noise(line)]


PROFILER_NOISE = ("profiler_start", "profiler_stop", "USDT", "CUPTI", "Kineto", "kineto",
                  "DeviceProperties.cpp")
"""Words of the lines Kineto writes to fd 2 when a profiler starts or stops: ``DeviceProperties.cpp:56]
gpuGetDeviceCount failed with code 35`` on a machine without a GPU driver (once a compiled graph ran, torch 2.14)."""


def _is_profiler_noise(line: str) -> bool:
    return any(word in line for word in PROFILER_NOISE)
