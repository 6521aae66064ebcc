"""The in-process probe: what a watched process knows about its SDPA calls, and its slow path.

The wrapper's fast path (``fast_path.py``) hands a call here when its signature is new, when a profiler burst is due
or running, or while the signature is still *wanted* (fewer than ``WANTED_SAMPLES`` profiled calls). A signature's
first call finds its call site, module path, chosen backend and why-not reasons, is timed on the host (plan
building, autotuning: shown apart) and, on CUDA, starts a profiler burst (``bursts.py``) in which each call's own
kernels are read. The first ``MODULE_CALLS`` calls of a signature (and calls in bursts) also note the module that
made them, and the first ones their call site; after those, every ``TIME_EVERY``-th call notes its site for
``TIME_EVERY`` calls (per-site counts sampled: the report says so). On the CPU every ``TIME_EVERY``-th call is timed
on the host; sampled calls have their output checked (``output_check.py``). A background thread reads finished
bursts and sends the state to the parent twice a second.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import replace

import torch
from torch.autograd.profiler import record_function

from ...core.calls.call_signature import CallSignature
from ...core.calls.watched_calls import CPU_KERNELS_NOTE, CallStats, ProcessState, UninspectedCalls
from ...core.traces.window_reading import FIRST_SUFFIX, GRAPH_PREFIX, RANGE_PREFIX
from ..states.state_socket import REPRO_DIR_ENV, StateSender
from .checks import output_check, repro
from .checks.gradient_sentinel import CallTensors, GradientSentinel, SignatureGradients
from .checks.held_checks import HeldChecks
from .checks.kernel_warm_up import KernelWarmUp
from .explain import choice, origin, padding
from .explain.environment_readings import EnvironmentReadings
from .explain.flag_state import FlagState
from .host_lead import LeadClock
from .kernels.bursts import MIN_BURST_CALLS, KernelBursts
from .kernels.profile_readings import Entry, ReadingSink, keep_sample
from .kernels.window_backwards import WindowBackwards
from .ranks import RankInfo
from .rebindings import Rebindings
from .thread_signals import leave_signals_to_the_program
from .uninspected import nested_calls, note_call, start_over

TIME_EVERY = 64  # a power of two: the fast path tests ``count & (TIME_EVERY - 1)``
TIME_FIRST = 8
MODULE_CALLS = 256
SEND_EVERY_S = 0.5
GONE_BY = MIN_BURST_CALLS
"""A burst whose signatures short of samples have not been called in its last this many calls ends (``gone_by``)."""


class Probe:
    def __init__(self, sender: StateSender | None, kernel_bursts: bool = True) -> None:
        self.sender = sender
        self.table: dict[tuple, Entry] = {}
        # The last signature the fast path found and its entry, one tuple replaced whole (a thread never reads one
        # signature's key with another's entry): a repeated signature is compared, not hashed and looked up.
        self.last_hit: list[tuple] = [(None, None)]
        self.sink = ReadingSink(kernel_bursts)
        self.special = False  # a burst is due or running, or a first call is probing: calls take the slow path
        self.probing = False
        self.flag_state = FlagState()
        self.compiled: list[str] = []
        self.bursts = KernelBursts(kernel_bursts)
        self.original: Callable | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._thread_pid = -1
        self._stop = threading.Event()
        self._last_sent: tuple | None = None
        self.in_burst: dict[int, int] = {}  # entry index → its calls in the running burst (first calls not counted)
        self.since_short: int | None = None  # the running burst's calls since one of a signature short of samples
        self.backwards = WindowBackwards()  # the running burst's training calls: has their backward run?
        self.rank = RankInfo()
        self._finished_pid = -1
        self.error = ""
        self.environment = EnvironmentReadings()  # read at start by install(), at the end by finish()
        self.held = HeldChecks()  # checks due while a window records, run once it has stopped
        self.owed_checks: set[int] = set()  # entries whose held forward check could not run: their next call's is
        self.gradients = GradientSentinel()
        self.gradients.on_flagged = self.save_repro
        self.gradients.held = self.held
        self.nested = nested_calls()  # SDPA on nested tensors: counted, handed to torch untouched
        # calls counted but not inspected (uninspected.py): SDPA inside C++, on nested tensors
        self.uninspected: list[UninspectedCalls] = [self.nested]
        self.rebindings = Rebindings()  # what install() rebound in torch, for uninstall() to put back
        self.leads = LeadClock()  # how far ahead of the GPU the host makes its calls, read after each window
        self.warm_up: KernelWarmUp | None = None  # the checks' kernels loaded before the first call (install())

    @property
    def entries(self) -> list[Entry]:
        return self.sink.entries

    def nested_call(self, original, q, k, v, mask, dropout_p, causal, scale, gqa):
        """SDPA on nested tensors (jagged shapes, no signature): counted, run as it was called."""
        note_call(self.nested, self.start_sending, 2)
        return original(q, k, v, mask, dropout_p, causal, scale=scale, enable_gqa=gqa)

    # -- the slow path -----------------------------------------------------------------------
    def first_call(self, key, q, k, v, mask, dropout_p, causal, scale, gqa) -> Entry:
        with self._lock:
            entry = self.table.get(key)
            if entry is not None:
                return entry
            flags = self.flag_state.flags(key[-1])
            signature = CallSignature(
                q_shape=tuple(q.shape), kv_shape=tuple(k.shape), dtype=str(q.dtype), device=str(q.device),
                mask="none" if mask is None else ("bool" if mask.dtype == torch.bool else "float"),
                mask_shape=None if mask is None else tuple(mask.shape), causal=bool(causal),
                dropout_p=float(dropout_p), scale=scale, gqa=bool(gqa), grad=bool(key[10]),
                flags=flags,
            )
            frame = origin.caller_frame(2)
            stats = CallStats(signature, site=origin.call_site(frame), module=origin.module_path(frame))
            self.explain(stats, flags, q, k, v, mask, dropout_p, causal, scale, gqa)
            stats.mask_causal = not causal and choice.mask_is_causal(mask, q, k)
            stats.mask_form = choice.mask_form(mask, q, k, causal)
            stats.layouts = tuple(choice.memory_layout(t) for t in (q, k, v))
            # Torch sets its default priority order at the first choice in the process: read it after.
            stats.signature = replace(signature, priority=choice.priority_order())
            entry = self.sink.add(stats, q.device.type == "cuda")
            if signature.grad:
                entry.gradients = SignatureGradients(owner=entry)
                stats.check.backward = entry.gradients.check
            self.rank.refresh()  # a spawned rank's group may be gone by the time its last state is sent
            self.table[key] = entry
            # Torch may set its priority order at the first choice: the same call, keyed on the new state.
            token = self.flag_state.refresh()
            if token != key[-1]:
                self.table[key[:-1] + (token,)] = entry
            if entry.cuda:
                self.bursts.signature_seen()
                self.special = self.special or self.bursts.due
            self._ensure_thread()
            return entry

    def explain(self, stats: CallStats, flags, q, k, v, mask, dropout_p, causal, scale, gqa) -> None:
        """The backend SDPA picks and why not the others (on the CPU a reason is read by forcing one
        backend for a moment: other threads' calls wait on the slow path meanwhile, and the forced
        flags make no signature)."""
        self.probing, self.special, self.flag_state.frozen = True, True, True
        try:
            stats.backend, stats.choice_error = choice.chosen_backend(q, k, v, mask, dropout_p, causal, scale, gqa)
            stats.why_not = choice.why_not(stats.backend, flags, q, k, v, mask, dropout_p, causal, scale, gqa)
        except Exception as exc:  # noqa: BLE001 - explaining must never break the program
            stats.choice_error = f"sdpa-tui could not ask torch: {exc}"
        finally:
            self.flag_state.frozen, self.probing = False, False
            self.special = self.bursts.active or self.bursts.due

    def slow_call(self, key, entry, original, q, k, v, mask, dropout_p, causal, scale, gqa):
        if entry is None:
            entry = self.first_call(key, q, k, v, mask, dropout_p, causal, scale, gqa)
        elif self.probing:  # another thread has forced a backend for a moment: wait until it is restored
            with self._lock:
                pass
        entry.count += 1
        bursts = self.bursts
        if entry.wanted and not bursts.due and not bursts.active:
            bursts.cover(never_profiled=entry.profiled == 0)
            self.special = self.special or bursts.due
        if self.special:
            self.burst_tick()
            if bursts.active:
                bursts.calls += 1
                first = FIRST_SUFFIX if entry.count == 1 else ""
                self.in_burst[entry.index] = self.in_burst.get(entry.index, 0) + (not first)
                self.note_short(entry.profiled + self.in_burst[entry.index] < entry.needed)
                with record_function(f"{RANGE_PREFIX}{entry.index}{first}"):
                    out = self.sampled_call(entry, original, q, k, v, mask, dropout_p, causal, scale, gqa, False)
                if entry.gradients is not None:
                    self.backwards.expect(entry.index, out)
                if self.output_check_due(entry, entry.count):
                    self.check_after_window(entry, out, q, k, v, mask, dropout_p, causal, scale, gqa)
                return out
        return self.sampled_call(entry, original, q, k, v, mask, dropout_p, causal, scale, gqa)

    def sampled_call(self, entry, original, q, k, v, mask, dropout_p, causal, scale, gqa, check=True):
        """A call whose module is noted, timed on the host where that is its clock, its output checked if due."""
        count = entry.count
        if count <= MODULE_CALLS or self.bursts.active or not count & (TIME_EVERY - 1):
            self.note_origin(entry, count, origin.caller_frame(2))
        timed = count == 1 or not entry.cuda and (count <= TIME_FIRST or not count & (TIME_EVERY - 1))
        tap = None
        if entry.gradients is not None:  # its backward is watched: SDPA runs on views whose gradients are seen
            tap = self.gradients.wrap(entry.gradients, count, q, k, v, mask, dropout_p, causal, scale, gqa)
        read = None
        if entry.cuda and not self.bursts.active:  # no lead read inside a window: the profiler slows the host
            read = self.leads.sample(entry, q.device, mask)
        t0 = time.perf_counter_ns()
        if tap is None:
            out = original(q, k, v, mask, dropout_p, causal, scale=scale, enable_gqa=gqa)
        else:
            out = tap[3](original(tap[0], tap[1], tap[2], mask, dropout_p, causal, scale=scale, enable_gqa=gqa))
        us = (time.perf_counter_ns() - t0) / 1e3
        self.leads.follow_backward(read, out)
        if count == 1:
            entry.stats.first_call_us = us  # the host's time: plan building, autotuning (CUDA: no sync)
        elif timed:
            keep_sample(entry.stats.host_us, us)
        if padding.due(count, entry.stats):  # after the timing: not the call's time
            padding.read_lengths(entry.stats, mask)
        if check and self.output_check_due(entry, count):  # after the timing: not the call's time
            output_check.check_output(entry.stats.check, out, q, k, v, mask, dropout_p, causal, scale,
                                      gqa)
        return out

    def output_check_due(self, entry, count: int) -> bool:
        """Is this call's output checked: the signature's due one, or one owed since a held check could not run?"""
        due = output_check.due(count, entry.stats.check, entry.index in self.owed_checks)
        if due:
            self.owed_checks.discard(entry.index)
        return due

    def check_after_window(self, entry, out, q, k, v, mask, dropout_p, causal, scale, gqa) -> None:
        """A call in a window is due its forward check: held until the window stops (``held_checks.py``), or now
        where it cannot be held."""
        check = entry.stats.check

        def run() -> None:
            output_check.check_output(check, out, q, k, v, mask, dropout_p, causal, scale, gqa)

        capturing = isinstance(out, torch.Tensor) and out.is_cuda and torch.cuda.is_current_stream_capturing()
        if capturing or not self.held.hold(run, (out, q, k, v, mask), lambda: self.owed_checks.add(entry.index)):
            run()

    def save_repro(self, state: SignatureGradients, tensors: CallTensors) -> str:
        """A flagged call's repro folder, under the directory ``watch`` named; "" when none was named."""
        root = os.environ.get(REPRO_DIR_ENV)
        entry = state.owner
        if not root or entry is None:
            return ""
        stats = entry.stats
        try:
            name = repro.folder_name(entry.index, stats.backend, tensors.q)
            return repro.write(root, name, tensors, stats.backend, stats.site, state.check.summary())
        except Exception as exc:  # noqa: BLE001 - said in the check; the program goes on
            state.check.note = state.check.note or f"repro not saved: {type(exc).__name__}: {exc}"[:160]
            return ""

    def note_origin(self, entry: Entry, count: int, frame) -> None:
        """A sampled call's site and module: each of the first ``MODULE_CALLS`` calls counts at its site, later every
        ``TIME_EVERY``-th stands for ``TIME_EVERY`` calls there; calls in a burst note their module only."""
        if count <= MODULE_CALLS:
            entry.note_site(origin.call_site(frame), 1)
        elif not count & (TIME_EVERY - 1):
            entry.note_site(origin.call_site(frame), TIME_EVERY)
        if count <= MODULE_CALLS or self.bursts.active:
            entry.note_module(origin.module_path(frame))

    def burst_tick(self) -> None:
        """On the calling thread: start a due burst, stop a finished one."""
        bursts = self.bursts
        if bursts.active:
            covered = self.covered()
            if bursts.should_stop(covered or self.gone_by()):
                bursts.stop(wanted_left=not covered, sampled=sum(self.in_burst.values()))
                if torch.cuda.is_initialized():  # the stop waited for the GPU: the host's and its clocks meet
                    self.leads.anchor_now(list(self.entries))
                self.held.release()
                self.special = bursts.due
        elif bursts.due:
            self.in_burst.clear()
            self.since_short = None
            self.backwards.new_window()
            self.leads.pause()
            bursts.start(record_shapes=any(e.stats.compiled for e in self.entries))  # compiled ops match by shapes
            if bursts.active:
                self.held.begin()
            self.special = bursts.active
        else:
            self.special = False

    def covered(self) -> bool:
        """Does every signature that ran in this burst have its samples, counting this burst's calls, and has the
        backward of its training calls run?"""
        entries = self.entries
        return self.backwards.all_ran() and all(entries[i].profiled + n >= entries[i].needed
                                                for i, n in list(self.in_burst.items()))

    def note_short(self, short: bool) -> None:
        """A call ran in the burst: ``short``, its signature still wants samples (counting this call)."""
        if short:
            self.since_short = 0
        elif self.since_short is not None:
            self.since_short += 1

    def gone_by(self) -> bool:
        """Have the signatures that ran in this burst short of samples gone by: none of them called in its last
        ``GONE_BY`` calls, and its training calls' backward run? (A training loop's evaluation: 8 calls of a signature
        every 50 steps, its first building plans, so 7 samples of 8; on an H200 the window then stayed open for its
        half second, 7 steps of the training signature around it, as dear as the first window.) They stay wanted:
        a later window samples them."""
        return self.since_short is not None and self.since_short >= GONE_BY and self.backwards.all_ran()

    def graph_run(self, entries: list[Entry], compiled, args, kwargs):
        """A compiled graph's run, on the slow path: it may start or stop a burst (no range: its
        backend ops are read by shape)."""
        bursts = self.bursts
        if any(e.wanted for e in entries) and not bursts.due and not bursts.active:
            bursts.cover(never_profiled=all(e.profiled == 0 for e in entries))
            self.special = self.special or bursts.due
        if self.special:
            self.burst_tick()
            if bursts.active:
                bursts.calls += 1
                for e in entries:
                    self.in_burst[e.index] = self.in_burst.get(e.index, 0) + 1
                self.note_short(any(e.profiled + self.in_burst[e.index] < e.needed for e in entries))
                with record_function(f"{GRAPH_PREFIX}{entries[0].index}"):
                    return compiled(*args, **kwargs)
        return compiled(*args, **kwargs)

    # -- the background thread ---------------------------------------------------------------
    def start_sending(self) -> None:
        """The background thread that sends the state, if this process has none yet (a first call starts it)."""
        self._ensure_thread()

    def _ensure_thread(self) -> None:
        if self._thread_pid == os.getpid():
            return
        self._thread_pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="sdpa-tui-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        leave_signals_to_the_program()  # the program's SIGTERM or SIGINT must reach its own threads
        stopped = self.bursts.stopped  # a stopped window is exported at once: the next may not start before
        cupti = self.bursts.cupti
        while not self._stop.is_set():
            stopped.wait(0.05 if cupti.guarding(time.monotonic()) else SEND_EVERY_S)  # poked often while guarding
            stopped.clear()
            if self._stop.is_set():
                return
            try:
                self.bursts.cupti.poke()  # a teardown of CUPTI under way finishes in a CUDA call
                self.flag_state.refresh()  # a change made other than through torch's setters
                self.leads.collect()  # here, not at the calls: their host time is what is read
                self.collect()
                self.gradients.poll(self.gradient_states())
                if self.bursts.poll():
                    self.special = True
                self.send()
            except Exception:  # noqa: BLE001 - the probe never takes the program down
                pass

    def collect(self, in_process: bool = False) -> None:
        """Export stopped windows (before any other may start), then read them (``in_process``: here, not in a
        helper process)."""
        bursts = self.bursts
        bursts.export_all()
        while bursts.exported:
            t0 = time.monotonic()
            try:
                self.sink.apply_window(bursts.read_next(in_process), bursts.captures)
            except Exception as exc:  # noqa: BLE001 - said in the report; the next window is read
                bursts.captures.failed("read", exc)
            bursts.captures.read_s += time.monotonic() - t0

    def gradient_states(self) -> list[SignatureGradients]:
        return [e.gradients for e in list(self.entries) if e.gradients is not None]

    def state(self, final: bool = False) -> ProcessState:
        calls = [entry.snapshot() for entry in list(self.entries)]
        cuda_seen = any(e.cuda for e in self.entries)
        note = "" if cuda_seen or not self.entries else CPU_KERNELS_NOTE
        return ProcessState(
            pid=os.getpid(), calls=calls, compiled=list(self.compiled),
            compiled_kernels=list(self.sink.compiled_kernels), kernels_note=note, final=final, error=self.error,
            time_s=time.time(), captures=replace(self.bursts.captures), rank=self.rank.rank,
            local_rank=self.rank.local_rank, host=self.rank.host, environment=self.environment.start,
            environment_end=self.environment.end,
            uninspected=[replace(u, sites=dict(u.sites), modules=list(u.modules)) for u in self.uninspected if u.count],
        )

    def send(self, final: bool = False) -> None:
        if self.sender is None:
            return
        self.rank.refresh()  # the state below reads it
        fingerprint = (tuple(e.count for e in self.entries), self.sink.readings, len(self.compiled), self.error,
                       self.rank.rank, self.gradients.version, tuple(u.count for u in self.uninspected))
        if not final and fingerprint == self._last_sent:
            return
        self._last_sent = fingerprint
        self.sender.send(self.state(final))

    def finish(self, error: str = "", at_exit: bool = False) -> None:
        """At the program's end (or crash): last burst stopped and read, the final state sent. Once: the
        bootstrap and the start-up hook's ``atexit`` may both call it. ``at_exit``: the process is ending (the
        program has finished), so the last windows are read in this process (``window_files.py``); a block of the
        Python API ends with the program going on."""
        self.error = error or self.error
        if self._finished_pid == os.getpid():
            return
        self._finished_pid = os.getpid()
        self._stop.set()
        self.bursts.stopped.set()
        if at_exit:  # windows are read in this process, a helper under way stopped: it would only lengthen the exit
            self.bursts.ending.set()
        if self.warm_up is not None:
            self.warm_up.stop(wait_s=5.0)
        thread = self._thread
        if thread is not None and self._thread_pid == os.getpid() and thread is not threading.current_thread():
            thread.join(timeout=30.0)  # it may be reading a burst: its kernels belong in the final state
        self.environment.read(end=True)  # the program may have changed flags or variables
        try:
            if self.bursts.active:
                self.bursts.stop(final=True)
            self.held.release()
            self.leads.collect(wait=True)
            self.collect(in_process=at_exit)
            self.gradients.poll(self.gradient_states(), wait=True)
        except Exception:  # noqa: BLE001
            pass
        self.send(final=True)

    def after_fork_in_child(self) -> None:
        """A forked child counts its own calls, on its own connection and thread."""
        self._lock = threading.Lock()
        self.table.clear()  # the wrapper holds this dict
        self.last_hit[0] = (None, None)  # and this list
        self.sink = ReadingSink(self.bursts.enabled)
        self.bursts = KernelBursts(self.bursts.enabled)
        self.special = False
        self._thread_pid = -1
        self._stop = threading.Event()
        self._last_sent = None
        self.in_burst = {}
        self.since_short = None
        self.backwards = WindowBackwards()
        self.rank = RankInfo()
        self.held = HeldChecks()
        self.owed_checks = set()
        self.gradients = GradientSentinel()
        self.gradients.on_flagged = self.save_repro
        self.gradients.held = self.held
        self.leads = LeadClock()
        self.warm_up = None  # the parent's thread is not the child's: nothing to wait for at its end
        self.flag_state.after_fork_in_child()
        start_over(self.uninspected)
        if self.sender is not None:
            self.sender.reset_after_fork()
