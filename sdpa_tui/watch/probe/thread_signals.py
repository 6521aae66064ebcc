"""Watch's thread in a watched process takes none of the program's signals.

The kernel delivers a process-directed signal (``kill PID``, a Pool's ``terminate()``, Ctrl-C) to any
thread that does not block it. Python runs its handlers only in the main thread: when the signal lands
on another thread, the C handler notes it, and a main thread blocked in a system call (a lock, a
semaphore, a ``wait``) is not interrupted, so a Python handler never runs. With watch's SIGTERM handler
in a forked ``multiprocessing.Pool`` worker (``install.flush_on_sigterm``; the handler is inherited), a
worker blocked on the pool's queue lock took its ``terminate()`` on watch's thread and never ended, and
the program hung in ``Pool.__exit__`` (a CI run on a loaded 2-core machine, 2026-11-26). Blocked here,
every such signal goes to a thread of the program's own. (A SIGTERM that reaches a forked child before it first
runs is another matter: ``install._before_fork``.)
"""

from __future__ import annotations

import signal

SYNCHRONOUS = frozenset(getattr(signal, name) for name in
                        ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT", "SIGTRAP", "SIGSYS", "SIGKILL", "SIGSTOP")
                        if hasattr(signal, name))
"""Signals a thread raises on itself (faults) or that cannot be blocked: left as they are."""


def leave_signals_to_the_program() -> None:
    """Block, in the calling thread, every signal the program may handle (call it first thing in watch's thread)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - SYNCHRONOUS)
