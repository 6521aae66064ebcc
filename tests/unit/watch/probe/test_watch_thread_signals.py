"""Watch's thread in a watched process blocks the program's signals, so they reach the program's own threads
(a forked Pool worker hung in CI when its terminate() SIGTERM landed on watch's thread: thread_signals.py)."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import pytest
from support.waiting import wait_until

from sdpa_tui.watch.probe.slow_path import Probe
from sdpa_tui.watch.probe.thread_signals import leave_signals_to_the_program

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"), pytest.mark.torch_range]


def blocked_in(native_id: int) -> set[int]:
    status = Path(f"/proc/self/task/{native_id}/status").read_text()
    mask = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigBlk:")), 16)
    return {n for n in range(1, 65) if mask & (1 << (n - 1))}


def test_a_thread_that_leaves_signals_blocks_the_asynchronous_ones_only() -> None:
    seen: list[set[int]] = []

    def run() -> None:
        leave_signals_to_the_program()
        seen.append(blocked_in(threading.get_native_id()))

    t = threading.Thread(target=run)
    t.start()
    t.join()
    (blocked,) = seen
    assert {signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGCHLD} <= blocked
    assert not {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGABRT} & blocked
    assert signal.SIGTERM not in blocked_in(threading.get_native_id()), "the calling test's thread is untouched"


def test_the_probes_thread_blocks_sigterm_and_sigint() -> None:
    probe = Probe(None, kernel_bursts=False)
    before = set(threading.enumerate())
    probe.start_sending()
    try:
        thread = wait_until(lambda: next((t for t in set(threading.enumerate()) - before
                                          if t.name == "sdpa-tui-watch" and t.native_id), None), 10,
                            "the probe's thread running")
        # its first line blocks them
        wait_until(lambda: {signal.SIGTERM, signal.SIGINT} <= blocked_in(thread.native_id), 10,
                   "SIGTERM and SIGINT blocked in the probe's thread")
    finally:
        probe.finish()  # stops and joins its thread
    assert not thread.is_alive()


def test_a_forked_child_ends_on_sigterm_as_unwatched_and_the_program_keeps_watchs_flush() -> None:
    """A Pool worker that took its terminate() just before blocking on the pool's queue lock never ran watch's
    Python handler (the main thread not back in the interpreter), and the program hung in ``Pool.__exit__`` (CI,
    2026-11-28): a forked child gets SIGTERM's default back, the program keeps watch's handler; a program's own
    handler is left alone in both."""
    import subprocess

    script = r"""
import os, signal, sys
from sdpa_tui.watch.probe import install

class Probe:
    def finish(self, why="", at_exit=False):
        pass

os.register_at_fork(before=install._before_fork, after_in_parent=install._release_sigterm,
                    after_in_child=install._after_fork_in_child)  # as install() registers them
own = sys.argv[1] == "own"
if own:
    signal.signal(signal.SIGTERM, lambda *_: None)
install.flush_on_sigterm(Probe())
handler = signal.getsignal(signal.SIGTERM)
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    child = signal.getsignal(signal.SIGTERM)
    os.write(write, b"default" if child is signal.SIG_DFL else b"same" if child is handler else b"other")
    os._exit(0)
os.waitpid(pid, 0)
print(os.read(read, 16).decode(), "watch's" if install._on_sigterm[:1] == [handler] else "own",
      "kept" if signal.getsignal(signal.SIGTERM) is handler else "changed")
"""
    for case, expected in [("default", "default watch's kept"), ("own", "same own kept")]:
        out = subprocess.run([sys.executable, "-c", script, case], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == expected, (case, out.stdout, out.stderr)


def test_a_sigterm_sent_before_the_forked_child_first_runs_still_ends_it() -> None:
    """The hang itself: a Pool's terminate() came before its worker had run at all (a loaded machine), watch's
    inherited handler noted the signal on the way back from fork() and Python cleared the note; the worker blocked on
    the queue lock for good. Here the parent signals the child at once, five times; the child blocks in a read."""
    import subprocess

    script = r"""
import os, signal, sys, time
from sdpa_tui.watch.probe import install

class Probe:
    def finish(self, why="", at_exit=False):
        pass

os.register_at_fork(before=install._before_fork, after_in_parent=install._release_sigterm,
                    after_in_child=install._after_fork_in_child)
install.flush_on_sigterm(Probe())
ended = []
for _ in range(5):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.read(read, 1)  # blocks: nothing is ever written
        os._exit(3)
    os.kill(pid, signal.SIGTERM)  # before the child has run, most times
    deadline = time.monotonic() + 10
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        ended.append("hung")
    else:
        ended.append("terminated" if os.WIFSIGNALED(done[1]) and os.WTERMSIG(done[1]) == signal.SIGTERM else "other")
    os.close(read), os.close(write)
print(" ".join(ended))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["terminated"] * 5, out.stdout
