"""A stopped profiler window, exported and read: the trace goes to a file, a helper process reads it.

The export must happen before the next window starts: a Kineto result exported after another
profiler session has started comes back with every GPU and runtime record untimed (ts and dur 0;
seen on the H100 with torch 2.11, CUDA 13.0: ``docs/lab-notes/watch-truth.md``), so
:class:`bursts.KernelBursts` exports the last window before it starts the next. The reading itself runs in
a helper process (``core/traces/window_reading.py``), off the program's GIL; at the process's end (the program has
finished) in the process itself, where the helper's start (a Python process and its imports, about 0.1 s on the
2-core VM) would only add to the program's exit. A helper still under way when the process ends is stopped and its
window read in the process too: a program that ends right after a window (a 3-step decoder on an H200) otherwise
waited for the helper's whole read at its exit (0.2 s more than plain).

With ``SDPA_TUI_KEEP_TRACES=DIR`` each window's trace is kept in DIR, and its start, stop and
reading are logged in ``DIR/windows-<pid>.log`` (to open in Perfetto when a reading looks wrong).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time

from ....core.installation import IMPORT_ROOT
from ....core.traces.trace import load_trace
from ....core.traces.window_reading import WindowReading, from_json, read_window

KEEP_TRACES_ENV = "SDPA_TUI_KEEP_TRACES"
_HELPER = ("import sys; sys.path.insert(0, sys.argv.pop(1)); from sdpa_tui.core.traces.window_reading import main; "
           "sys.exit(main(sys.argv[1:]))")
HELPER_TIMEOUT_S = 300.0
HELPER_POLL_S = 0.02
"""How often a helper's read looks whether the process has begun to end."""


def log(what: str, lines: list[str] | tuple[str, ...] = ()) -> None:
    keep = os.environ.get(KEEP_TRACES_ENV)
    if keep:
        with open(os.path.join(keep, f"windows-{os.getpid()}.log"), "a", encoding="utf-8") as f:
            f.write(f"{time.monotonic():.4f} {what}\n" + "".join(f"    {line}\n" for line in lines))


def export(profiler) -> str:
    """Write ``profiler``'s trace to a file (its path returned) and free the profiler's result."""
    keep = os.environ.get(KEEP_TRACES_ENV)
    fd, path = tempfile.mkstemp(prefix=f"sdpa-tui-watch-{os.getpid()}-", suffix=".json", dir=keep or None)
    os.close(fd)
    try:
        profiler.export_chrome_trace(path)
    except BaseException:
        os.unlink(path)
        raise
    finally:
        _free(profiler)
    return path


def read(path: str, in_process: bool = False, ending: threading.Event | None = None) -> WindowReading:
    """The window in the trace at ``path``, read in a helper process (in this one with ``in_process``, if the helper
    cannot run, or once ``ending`` is set: the process is ending, and the helper is stopped); the file is removed
    unless traces are kept."""
    try:
        in_process = in_process or ending is not None and ending.is_set()
        window = read_window(load_trace(path)) if in_process else _read(path, ending)
    finally:
        if not os.environ.get(KEEP_TRACES_ENV):
            os.unlink(path)
    r = window.reading
    log(f"read {os.path.basename(path)}: {len(r.ranged)} calls in ranges "
        f"({sum(1 for c in r.ranged if c.activities)} with GPU work), {len(r.compiled)} compiled ops, "
        f"{window.events} events, {r.untimed} GPU records untimed")
    return window


def _read(path: str, ending: threading.Event | None = None) -> WindowReading:
    """The window read by a helper process; here, where the helper fails or ``ending`` is set meanwhile (the helper
    is then stopped)."""
    try:
        with subprocess.Popen([sys.executable, "-I", "-c", _HELPER, IMPORT_ROOT, path], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True) as proc:
            deadline = time.monotonic() + HELPER_TIMEOUT_S
            while True:
                try:
                    out, err = proc.communicate(timeout=HELPER_POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    ended = ending is not None and ending.is_set()
                    if ended or time.monotonic() > deadline:
                        proc.kill()
                        proc.communicate()
                        log("helper stopped: " + ("the process is ending" if ended else "timed out"))
                        return read_window(load_trace(path))
        if proc.returncode == 0:
            return from_json(out)
        log(f"helper exited {proc.returncode}: {err.strip()[-500:]}")
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        log(f"helper failed: {exc!r}")
    return read_window(load_trace(path))


def _free(profiler) -> None:
    """Drop the Kineto result now: the profile object sits in a reference cycle that only a full collection
    (seconds of GIL in a large program) would free."""
    inner = getattr(profiler, "profiler", None)
    if inner is not None:
        try:
            inner.kineto_results = None
            profiler.profiler = None
        except AttributeError:  # another torch's profiler: the collector frees it in its time
            pass
