"""The in-process probe: ``torch.nn.functional.scaled_dot_product_attention`` rebound to a thin wrapper.

Fast path, after a signature's first call: build a key (shapes, dtype, device, mask, scalars,
autograd, and the flag state's token: see ``flag_state.py``), compare it with the last key seen
(a dict lookup when it differs), one increment.
Every ``TIME_EVERY``-th call of a signature (and its first few) is timed: CUDA events read
later on the background thread (no sync on the hot path), or the host clock on the CPU. A
signature's first call also finds its call site, module path, chosen backend and why-not
reasons, and on CUDA makes a kernel burst due (``bursts.py``). Under
``torch.compiler.is_compiling()`` (read as its two parts) the wrapper only forwards (no graph
break). A background thread sends the state to the parent twice a second.
"""

from __future__ import annotations

import functools
import os
import threading
import time
import types
import traceback
from collections import deque
from dataclasses import replace

import torch
from torch.autograd.profiler import record_function

from ..core.watched_calls import CPU_KERNELS_NOTE, CallSignature, CallStats, ProcessState
from . import choice, origin
from .bursts import RANGE_PREFIX, KernelBursts, read_profile
from .channel import StateSender
from .flag_state import FlagState

TIME_EVERY = 64  # a power of two: the fast path tests ``count & (TIME_EVERY - 1)``
TIME_FIRST = 8
MAX_SAMPLES = 256
SEND_EVERY_S = 0.5


def _keep_sample(samples: list[float], us: float) -> None:
    """Append a timing, keeping the last ``MAX_SAMPLES``."""
    samples.append(us)
    if len(samples) > MAX_SAMPLES:
        del samples[: len(samples) - MAX_SAMPLES]


class _Entry:
    __slots__ = ("count", "stats", "index", "cuda")

    def __init__(self, stats: CallStats, index: int, cuda: bool) -> None:
        self.count = 0
        self.stats = stats
        self.index = index
        self.cuda = cuda


class Probe:
    def __init__(self, sender: StateSender | None, kernel_bursts: bool = True) -> None:
        self.sender = sender
        self.table: dict[tuple, _Entry] = {}
        # The last signature the fast path found and its entry, as one tuple (replaced whole, so a
        # thread never reads one signature's key with another's entry): a repeated signature is
        # compared, not hashed and looked up.
        self.last_hit: list[tuple] = [(None, None)]
        self.entries: list[_Entry] = []
        self.pending: deque = deque()
        self.special = False  # a burst is due or running, or a first call is probing: calls take the slow path
        self.probing = False
        self.flag_state = FlagState()
        self.compiled: list[str] = []
        self.compiled_kernels: list[str] = []
        self.bursts = KernelBursts(kernel_bursts)
        self.original = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._thread_pid = -1
        self._stop = threading.Event()
        self._last_sent: tuple | None = None
        self.error = ""

    # -- the slow path -----------------------------------------------------------------------
    def first_call(self, key, q, k, v, mask, dropout_p, causal, scale, gqa) -> _Entry:
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
            # On the CPU a reason is read by forcing one backend (global flags) for a moment: other
            # threads' calls wait on the slow path meanwhile, and the forced flags make no signature.
            self.probing, self.special, self.flag_state.frozen = True, True, True
            try:
                stats.backend, stats.choice_error = choice.chosen_backend(q, k, v, mask, dropout_p, causal, scale, gqa)
                stats.why_not = choice.why_not(stats.backend, flags, q, k, v, mask, dropout_p, causal, scale, gqa)
            except Exception as exc:  # noqa: BLE001 - explaining must never break the program
                stats.choice_error = f"sdpa-tui could not ask torch: {exc}"
            finally:
                self.flag_state.frozen, self.probing = False, False
                self.special = self.bursts.active or self.bursts.due
            # Torch sets its default priority order at the first choice in the process: read it after.
            stats.signature = replace(signature, priority=choice.priority_order())
            entry = _Entry(stats, len(self.entries), q.device.type == "cuda")
            self.entries.append(entry)
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

    def slow_call(self, key, entry, original, q, k, v, mask, dropout_p, causal, scale, gqa):
        if entry is None:
            entry = self.first_call(key, q, k, v, mask, dropout_p, causal, scale, gqa)
        elif self.probing:  # another thread has forced a backend for a moment: wait until it is restored
            with self._lock:
                pass
        entry.count += 1
        if self.special:
            self.burst_tick()
            if self.bursts.active:
                self.bursts.calls += 1
                with record_function(f"{RANGE_PREFIX}{entry.index}"):
                    if entry.count <= TIME_FIRST:  # a short program may make every call inside a burst
                        return self.timed_call(entry, original, q, k, v, mask, dropout_p, causal, scale, gqa)
                    return original(q, k, v, mask, dropout_p, causal, scale=scale, enable_gqa=gqa)
        return self.timed_call(entry, original, q, k, v, mask, dropout_p, causal, scale, gqa)

    def timed_call(self, entry, original, q, k, v, mask, dropout_p, causal, scale, gqa):
        if entry.cuda and not torch.cuda.is_current_stream_capturing():  # no timing events in a CUDA graph
            stream = torch.cuda.current_stream(q.device)  # the call's device, not the current one
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            out = original(q, k, v, mask, dropout_p, causal, scale=scale, enable_gqa=gqa)
            end.record(stream)
            self.pending.append((entry, start, end))
            return out
        if entry.cuda:
            return original(q, k, v, mask, dropout_p, causal, scale=scale, enable_gqa=gqa)
        t0 = time.perf_counter_ns()
        out = original(q, k, v, mask, dropout_p, causal, scale=scale, enable_gqa=gqa)
        _keep_sample(entry.stats.host_us, (time.perf_counter_ns() - t0) / 1e3)
        return out

    def burst_tick(self) -> None:
        """On the calling thread: start a due burst, stop a finished one."""
        bursts = self.bursts
        if bursts.active:
            if bursts.should_stop():
                bursts.stop()
                self.special = bursts.due
        elif bursts.due:
            bursts.start()
            self.special = bursts.active
        else:
            self.special = False

    # -- the background thread ---------------------------------------------------------------
    def _ensure_thread(self) -> None:
        if self._thread_pid == os.getpid():
            return
        self._thread_pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="sdpa-tui-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(SEND_EVERY_S):
            try:
                self.flag_state.refresh()  # a change made other than through torch's setters
                self.collect()
                if self.bursts.poll():
                    self.special = True
                self.send()
            except Exception:  # noqa: BLE001 - the probe never takes the program down
                pass

    def collect(self, wait: bool = False) -> None:
        """Read finished CUDA events and finished profiler bursts."""
        while self.pending:
            entry, start, end = self.pending[0]
            if not wait and not end.query():
                break
            self.pending.popleft()
            if wait:
                end.synchronize()
            _keep_sample(entry.stats.gpu_us, start.elapsed_time(end) * 1e3)
        while self.bursts.finished:
            per_signature, compiled = read_profile(self.bursts.finished.pop(0))
            for index, names in per_signature.items():
                if index < len(self.entries):
                    kernels = self.entries[index].stats.kernels
                    kernels.extend(n for n in names if n not in kernels)
            self.compiled_kernels.extend(n for n in compiled if n not in self.compiled_kernels)

    def state(self, final: bool = False) -> ProcessState:
        calls = []
        for entry in list(self.entries):
            stats = entry.stats
            calls.append(CallStats(
                stats.signature, entry.count, stats.site, stats.module, stats.backend, stats.choice_error,
                dict(stats.why_not), list(stats.gpu_us), list(stats.host_us), list(stats.kernels),
            ))
        cuda_seen = any(e.cuda for e in self.entries)
        note = "" if cuda_seen or not self.entries else CPU_KERNELS_NOTE
        return ProcessState(
            pid=os.getpid(), calls=calls, compiled=list(self.compiled), compiled_kernels=list(self.compiled_kernels),
            kernels_note=note, final=final, error=self.error, time_s=time.time(),
        )

    def send(self, final: bool = False) -> None:
        if self.sender is None:
            return
        fingerprint = (tuple(e.count for e in self.entries), sum(len(e.stats.gpu_us) + len(e.stats.kernels)
                       for e in self.entries), len(self.compiled), len(self.compiled_kernels), self.error)
        if not final and fingerprint == self._last_sent:
            return
        self._last_sent = fingerprint
        self.sender.send(self.state(final))

    def finish(self, error: str = "") -> None:
        """At the program's end (or crash): last burst stopped, events read, the final state sent."""
        self.error = error
        self._stop.set()
        thread = self._thread
        if thread is not None and self._thread_pid == os.getpid() and thread is not threading.current_thread():
            thread.join(timeout=30.0)  # it may be reading a burst: its kernels belong in the final state
        try:
            if self.bursts.active:
                self.bursts.stop()
            self.collect(wait=True)
        except Exception:  # noqa: BLE001
            pass
        self.send(final=True)

    def after_fork_in_child(self) -> None:
        """A forked child counts its own calls, on its own connection and thread."""
        self._lock = threading.Lock()
        self.table.clear()  # the wrapper holds this dict
        self.last_hit[0] = (None, None)  # and this list
        self.entries = []
        self.pending = deque()
        self.bursts = KernelBursts(self.bursts.enabled)
        self.special = False
        self._thread_pid = -1
        self._stop = threading.Event()
        self._last_sent = None
        self.flag_state.after_fork_in_child()
        if self.sender is not None:
            self.sender.reset_after_fork()


def make_wrapper(original, probe: Probe):
    """The function that replaces ``torch.nn.functional.scaled_dot_product_attention``.

    The key is the cheapest that decides the backend: the three ``torch.Size`` objects, dtype,
    device, the mask's dtype and shape, the scalar arguments, whether autograd records the
    call, and the flag state's token (an int, refreshed only when flags or priority change).
    """
    table = probe.table  # cleared in place after a fork, never replaced
    last_hit = probe.last_hit  # likewise
    flag_state = probe.flag_state
    # ``torch.compiler.is_compiling()``, cheaper: Dynamo folds ``is_dynamo_compiling()`` to True while it
    # traces (the flag is then never read, so no guard on it); export and make_fx set the flag.
    dynamo_compiling = torch.compiler.is_dynamo_compiling
    compiler = torch.compiler
    if not hasattr(compiler, "_is_compiling_flag"):  # a torch without the flag: the public check alone
        dynamo_compiling, compiler = torch.compiler.is_compiling, types.SimpleNamespace(_is_compiling_flag=False)
    grad_enabled = torch.is_grad_enabled
    mask_bits = TIME_EVERY - 1

    def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                     scale=None, enable_gqa=False):
        if dynamo_compiling() or compiler._is_compiling_flag:
            return original(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
        try:
            signature = (
                query.shape, key.shape, value.shape, query.dtype, query.device,
                None if attn_mask is None else (attn_mask.dtype, attn_mask.shape),
                is_causal, dropout_p, scale, enable_gqa,
                grad_enabled() and (query.requires_grad or key.requires_grad or value.requires_grad),
                flag_state.token,
            )
            hit = last_hit[0]
            if hit[0] == signature:
                entry = hit[1]
            else:
                entry = table.get(signature)
                if entry is not None:
                    last_hit[0] = (signature, entry)
        except Exception:  # noqa: BLE001 - an input the key cannot describe: torch will say what is wrong
            return original(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
        if entry is None or probe.special:
            return probe.slow_call(signature, entry, original, query, key, value, attn_mask, dropout_p, is_causal,
                                   scale, enable_gqa)
        count = entry.count = entry.count + 1
        if count & mask_bits == 0 or count <= TIME_FIRST:
            return probe.timed_call(entry, original, query, key, value, attn_mask, dropout_p, is_causal, scale,
                                    enable_gqa)
        if scale is None and not enable_gqa:  # fewer keywords for torch's argument parser to read
            return original(query, key, value, attn_mask, dropout_p, is_causal)
        return original(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)

    scaled_dot_product_attention.__doc__ = original.__doc__
    scaled_dot_product_attention.__wrapped__ = original
    return scaled_dot_product_attention


def _watch_compile(probe: Probe) -> None:
    """Record what ``torch.compile`` is given; its result ticks the bursts (its calls skip the wrapper)."""
    compile_ = torch.compile

    def compile(model=None, **kwargs):  # noqa: A001 - torch's name
        if model is None:  # used as @torch.compile(...)
            return lambda fn: compile(fn, **kwargs)
        name = type(model).__name__ if isinstance(model, torch.nn.Module) else getattr(model, "__qualname__", repr(model))
        probe.compiled.append(f"{name} (compiled at {origin.call_site(origin.caller_frame(1))})")
        compiled = compile_(model, **kwargs)
        calls = [0]

        def tick(*_) -> None:
            calls[0] += 1
            _compiled_tick(probe, calls[0])

        if isinstance(compiled, torch.nn.Module):
            compiled.register_forward_pre_hook(tick)
            compiled.register_forward_hook(lambda *_: _compiled_tick(probe, 0))
            return compiled
        if not callable(compiled):
            return compiled
        is_compiling = torch.compiler.is_compiling

        @functools.wraps(compiled)
        def run_compiled(*args, **kw):
            if is_compiling():  # called from another compiled region: Dynamo sees torch's callable only
                return compiled(*args, **kw)
            tick()
            try:
                return compiled(*args, **kw)
            finally:
                _compiled_tick(probe, 0)

        return run_compiled

    compile.__doc__ = compile_.__doc__
    compile.__wrapped__ = compile_
    torch.compile = compile


def _compiled_tick(probe: Probe, call: int) -> None:
    """Before (``call`` ≥ 1: its number) and after (0) a compiled callable runs, on the calling thread."""
    try:
        if call and torch.cuda.is_initialized():
            if call == 2:  # the first call compiles: its second is the first that runs what the program will
                probe.bursts.signature_seen()
            else:
                probe.bursts.arm()
            probe._ensure_thread()
            probe.special = probe.special or probe.bursts.due
        if probe.special:
            probe.burst_tick()
            if probe.bursts.active:
                probe.bursts.calls += 1
    except Exception:  # noqa: BLE001 - the probe never takes the program down
        pass


def install(sender: StateSender | None, kernel_bursts: bool = True) -> Probe:
    """Rebind SDPA in ``torch.nn.functional`` (callers that look it up at call time see the wrapper)."""
    import torch.nn.functional as F

    probe = Probe(sender, kernel_bursts)
    probe.original = F.scaled_dot_product_attention
    F.scaled_dot_product_attention = make_wrapper(probe.original, probe)
    probe.flag_state.watch_setters()
    _watch_compile(probe)
    os.register_at_fork(after_in_child=probe.after_fork_in_child)
    return probe


def format_exception(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


__all__ = ["Probe", "install", "make_wrapper", "format_exception"]
