"""Watching a process: SDPA rebound to the wrapper, C++ paths to SDPA counted, ``torch.compile`` and compiled graphs
hooked, forks followed."""

from __future__ import annotations

import os
import signal
import traceback

import torch

from ..state_socket import StateSender
from .compiled_graphs import watch_graphs
from .explain import origin
from .fast_path import make_wrapper
from .scripted_ops import script_as_op
from .slow_path import Probe
from .uninspected import watch_entry_points


def _watch_compile(probe: Probe) -> None:
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
    torch.compile = compile


_installed: list[Probe] = []


def install(sender: StateSender | None, kernel_bursts: bool = True) -> Probe:
    """Rebind SDPA in ``torch.nn.functional`` (callers that look it up at call time see the wrapper). Once
    per process: the program's bootstrap and the start-up hook (``startup.py``) get the same probe."""
    import torch.nn.functional as F

    if _installed:
        return _installed[0]
    probe = Probe(sender, kernel_bursts)
    probe.environment.read()  # the flags and variables as found at start, before the program's first line
    probe.original = F.scaled_dot_product_attention
    F.scaled_dot_product_attention = make_wrapper(probe.original, probe)
    script_as_op(F.scaled_dot_product_attention, "aten::scaled_dot_product_attention")
    watch_entry_points(probe.uninspected, probe.start_sending)
    probe.flag_state.watch_setters()
    _watch_compile(probe)
    watch_graphs(probe)
    os.register_at_fork(after_in_child=probe.after_fork_in_child)
    _installed.append(probe)
    return probe


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
            probe.finish("terminated by SIGTERM")
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

        signal.signal(signal.SIGTERM, on_term)
    except (ValueError, OSError):  # not the main thread: the periodic sends are what is left
        pass

