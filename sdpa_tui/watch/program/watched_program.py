"""Parent side: start the watched program, collect its processes' states, stop it cleanly.

Never imports torch. The program runs in its own process group (unless it reads a terminal
on stdin), so Ctrl+C can stop it and every process it started.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.calls.watched_calls import ProcessState
from ...core.installation import IMPORT_ROOT
from ..states.collected_states import CollectedStates
from ..states.state_socket import DEFAULT_REPRO_DIR, HOOK_DIR, REPRO_DIR_ENV, SOCKET_ENV, StateListener
from .script_files import unopenable_script

if TYPE_CHECKING:
    from ...core.calls.watch_report import WatchReport

STOP_GRACE_S = 5.0
_BOOTSTRAP = "sdpa_tui.watch.probe.bootstrap"
_PYTHON_NAMES = ("python", "python3")
_VALUE_OPTIONS = ("-W", "-X")


class CommandError(ValueError):
    """The command cannot be watched; the message says what can."""


def child_command(program: list[str], module: str | None = None) -> list[str]:
    """``python x.py a`` / ``x.py a`` / ``-m mod a`` → the interpreter running the bootstrap (told the
    interpreter's name as typed, which python's own messages use)."""
    bootstrap = [sys.executable, "-m", _BOOTSTRAP]
    if module:
        return bootstrap + ["-m", module, *program]
    if not program:
        raise CommandError("nothing to watch: give a program after --, e.g. watch -- python train.py, or -m module")
    head, rest = program[0], program[1:]
    if Path(head).name.split(".")[0].rstrip("0123456789.") in _PYTHON_NAMES or Path(head).name.startswith("python3"):
        options: list[str] = []
        while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c", "-"):
            options.append(rest.pop(0))
            if options[-1] in _VALUE_OPTIONS and rest:
                options.append(rest.pop(0))
        if not rest or rest[0] in ("-c", "-"):
            raise CommandError("watch runs a script or a module (python x.py, python -m mod), not -c or stdin")
        return [sys.executable, *options, "-m", _BOOTSTRAP, "--as", head, *rest]
    if head.endswith(".py"):
        return bootstrap + program
    if shutil.which(head) is None:
        raise CommandError(f"{head}: command not found (watch runs python script.py, script.py, -m module, "
                           "or a launcher such as torchrun)")
    return list(program)  # a launcher (torchrun, a shell script): its Python processes are watched by the hook


class WatchedProgram:
    """``stdout``/``stderr``: None passes the program's own through; a file object receives them."""

    def __init__(self, program: list[str], module: str | None = None, stdout=None, stderr=None,
                 stdin=None, repro_dir: str = DEFAULT_REPRO_DIR) -> None:
        self.display = ["-m", module, *program] if module else list(program)
        self.command = child_command(program, module)
        self._out, self._err, self._in = stdout, stderr, stdin
        self.collected = CollectedStates(lambda: [self.process.pid] if self.process else [])
        self.listener: StateListener | None = None
        self.process: subprocess.Popen | None = None
        self.started = 0.0
        self.ended: float | None = None
        self.interrupted = False
        self._extra_env: dict[str, str] = {}
        self.repro_dir = os.path.abspath(repro_dir)  # a call whose gradients are flagged is saved under it

    def unopenable_script(self) -> str | None:
        """Python's one line when the script cannot be opened (it would print it and exit 2), before anything runs."""
        if _BOOTSTRAP not in self.command:
            return None  # a launcher: its own processes say what they cannot open
        rest = self.command[self.command.index(_BOOTSTRAP) + 1:]
        name = sys.executable
        if rest[:1] == ["--as"]:
            name, rest = rest[1], rest[2:]
        return None if rest[:1] == ["-m"] else unopenable_script(rest[0], name)

    def log_to(self, log) -> None:
        """The live UI's way: stdout and stderr into ``log`` (a file), unbuffered so it can be tailed;
        stdin from /dev/null (the UI owns the terminal), so the program gets its own process group."""
        self._out = self._err = log
        self._in = subprocess.DEVNULL
        self._extra_env = {"PYTHONUNBUFFERED": "1"}

    def running(self) -> bool:
        return self.process is not None and self.poll() is None

    def states(self) -> list[ProcessState]:
        return self.collected.states()

    def start(self) -> None:
        self.listener = self.collected.listen()
        env = dict(os.environ)
        env.update(self._extra_env)
        env[SOCKET_ENV] = self.listener.path
        env[REPRO_DIR_ENV] = self.repro_dir
        # the hook's sitecustomize watches every Python process the program starts (startup.py)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (HOOK_DIR, IMPORT_ROOT, env.get("PYTHONPATH", "")) if p)
        stdin = self._in if self._in is not None else None
        own_group = not (stdin is None and sys.stdin is not None and sys.stdin.isatty())
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            self.command, env=env, stdin=stdin, stdout=self._out, stderr=self._err,
            start_new_session=own_group,
        )
        self._own_group = own_group

    def poll(self) -> int | None:
        code = self.process.poll() if self.process else None
        if code is not None and self.ended is None:
            self.ended = time.monotonic()
        return code

    def wait(self) -> int:
        """Wait for the program; Ctrl+C stops it (and its process group) and still returns."""
        assert self.process is not None
        try:
            code = self.process.wait()
        except KeyboardInterrupt:
            self.interrupted = True
            code = self.stop()
        self.ended = self.ended or time.monotonic()
        self._finish_group()
        if self.listener:
            self.listener.drain()
        return code

    def stop(self) -> int:
        """SIGINT to the program's processes, then SIGKILL after a grace period."""
        process = self.process
        if process is None:
            return 0
        self._signal(signal.SIGINT)
        try:
            return process.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            return process.wait()
        except KeyboardInterrupt:  # a second Ctrl+C: no more grace
            self._signal(signal.SIGKILL)
            return process.wait()

    def _signal(self, signum: int) -> None:
        try:
            if self._own_group:
                os.killpg(self.process.pid, signum)
            else:
                self.process.send_signal(signum)
        except ProcessLookupError:
            pass

    def _finish_group(self) -> None:
        """Processes the program left behind in its group (workers, forks) are ended with it."""
        if not self._own_group or self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self) -> None:
        """Stop the program if it still runs, and end whatever it left in its process group."""
        if self.process is not None and self.process.poll() is None:
            self.stop()
        self._finish_group()
        self.collected.close()

    def elapsed_s(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def report(self, exit_code: int | None) -> WatchReport:
        return self.collected.report(self.display, exit_code, self.elapsed_s(), "the program started",
                                     ["stopped by Ctrl+C"] if self.interrupted else [])
