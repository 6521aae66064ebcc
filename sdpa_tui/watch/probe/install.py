"""Watching a process: SDPA rebound to the wrapper, C++ paths to SDPA counted, ``torch.compile`` and compiled graphs
hooked, forks followed; and, for a block of the Python API, all of it put back."""

from __future__ import annotations

import os
import signal
import threading
import traceback

import torch

from ..states.state_socket import StateSender
from .checks.kernel_warm_up import KernelWarmUp
from .compiled_graphs import watch_graphs
from .explain import origin
from .fast_path import make_wrapper
from .rebindings import Rebindings
from .slow_path import Probe
from .uninspected import watch_entry_points


def _watch_compile(probe: Probe, rebind: Rebindings) -> None:
    """Record what ``torch.compile`` is given (its graphs are counted by ``compiled_graphs``)."""
    compile_ = torch.compile

    def compile(model=None, **kwargs):  # noqa: A001 - torch's name
        if model is None:  # used as @torch.compile(...)
            return lambda fn: compile(fn, **kwargs)
        name = type(model).__name__ if isinstance(model, torch.nn.Module) else getattr(model, "__qualname__", repr(model))
        probe.compiled.append(f"{name} (compiled at {origin.call_site(origin.caller_frame(1))})")
        return compile_(model, **kwargs)

    compile.__doc__ = compile_.__doc__
    compile.__wrapped__ = compile_
    rebind.set(torch, "compile", compile)


_installed: list[Probe] = []
_fork_hook: list[bool] = []
_on_sigterm: list = []  # watch's SIGTERM handler, once set (``flush_on_sigterm``)
_fork_signals = threading.local()  # per forking thread: did _before_fork block SIGTERM?


def _before_fork() -> None:
    """Where watch's SIGTERM handler is in force: SIGTERM blocked in the forking thread until the child has it back
    at its default (``_after_fork_in_child``), the parent's unblocked again (``_after_fork_in_parent``).

    A Python handler inherited by the child never runs for a signal that comes before the child first runs: its C
    part notes it on the child's way back from ``fork()``, and Python clears such notes right after a fork. A
    ``multiprocessing.Pool`` (fork) whose work was done before a worker had run at all (a loaded machine) sent that
    worker ``terminate()``'s SIGTERM then; the worker lived on, blocked on the pool's queue lock, and the program hung
    in ``Pool.__exit__`` (this project's CI on a loaded 2-core machine, 2026-11-28, reproduced beside the test suite).
    Blocked, the signal waits for the child to take it at its default."""
    _fork_signals.blocked = False
    try:
        if _watchs_sigterm_in_force():
            _fork_signals.blocked = signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    except (ValueError, OSError, AttributeError):  # no pthread_sigmask here: as before
        pass


def _watchs_sigterm_in_force() -> bool:
    return bool(_on_sigterm) and signal.getsignal(signal.SIGTERM) is _on_sigterm[0]


def _release_sigterm() -> None:
    """After a fork, in the parent (``after_in_parent``) and the child: SIGTERM unblocked if ``_before_fork`` blocked
    it."""
    if getattr(_fork_signals, "blocked", False):
        _fork_signals.blocked = False
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


def _after_fork_in_child() -> None:
    """Registered once per process: the probe in force then, if any, follows the forked child, and SIGTERM ends the
    child as it would unwatched where watch's handler was inherited (then unblocked: one that came meanwhile ends it
    now). The child's counts since its last periodic send are lost to a SIGTERM; a program's own handler is left
    alone."""
    try:
        if _watchs_sigterm_in_force():
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except (ValueError, OSError):  # not the main thread (cannot be, just after a fork): left as it is
        pass
    _release_sigterm()
    if _installed:
        _installed[0].after_fork_in_child()


def installed() -> Probe | None:
    """The probe watching this process (the command's, or a block's of the Python API), if one is."""
    return _installed[0] if _installed else None


def install(sender: StateSender | None, kernel_bursts: bool = True) -> Probe:
    """Rebind SDPA in ``torch.nn.functional`` (callers that look it up at call time see the wrapper). Once
    per process: the program's bootstrap and the start-up hook (``startup.py``) get the same probe."""
    import torch.nn.functional as F

    if _installed:
        return _installed[0]
    probe = Probe(sender, kernel_bursts)
    probe.environment.read()  # the flags and variables as found at start, before the program's first line
    probe.original = F.scaled_dot_product_attention
    rebind = probe.rebindings
    rebind.set(F, "scaled_dot_product_attention", make_wrapper(probe.original, probe))
    rebind.script_as_op(F.scaled_dot_product_attention, "aten::scaled_dot_product_attention")
    watch_entry_points(probe.uninspected, probe.start_sending, rebind)
    probe.flag_state.watch_setters(rebind)
    _watch_compile(probe, rebind)
    watch_graphs(probe, rebind)
    if not _fork_hook:
        os.register_at_fork(before=_before_fork, after_in_parent=_release_sigterm,
                            after_in_child=_after_fork_in_child)
        _fork_hook.append(True)
    _installed.append(probe)
    probe.warm_up = KernelWarmUp(lambda: bool(probe.entries or probe.compiled))  # the checks' kernels, meanwhile
    probe.warm_up.start()
    return probe


def uninstall(probe: Probe) -> None:
    """Put back everything :func:`install` rebound (after ``probe.finish()``). A wrapper a caller kept, or a graph
    compiled meanwhile, goes on counting into this probe, which starts no profiler window again."""
    probe.bursts.disable()
    probe.special = False
    if probe.warm_up is not None:
        probe.warm_up.stop(wait_s=5.0)
    probe.rebindings.restore()
    if probe in _installed:
        _installed.remove(probe)


def format_exception(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def flush_on_sigterm(probe: Probe) -> None:
    """A scheduler's SIGTERM (torchrun ends the other ranks so when one fails) would end the process
    before its last state is sent: send it, then die of the signal as before. Only where the program
    left SIGTERM to its default (its own handler is never replaced), and only from the main thread."""
    try:
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return

        def on_term(signum, frame):
            probe.finish("terminated by SIGTERM", at_exit=True)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

        signal.signal(signal.SIGTERM, on_term)
        _on_sigterm[:] = [on_term]
    except (ValueError, OSError):  # not the main thread: the periodic sends are what is left
        pass

