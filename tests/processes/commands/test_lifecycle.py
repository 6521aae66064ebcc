"""Every way a session ends leaves no engine behind (DESIGN.md fault table: "SSH connection
drops", "engine process dies").

The real ``python3 -m sdpa_tui --device cpu`` runs in a real terminal: a private tmux server
(its own socket, no user config), or for one test a pty this test holds. Each test waits for
live numbers on the screen, ends the session one way, and reads the processes from /proc:

- the UI is the tmux pane's process (started with ``exec``);
- the engine is its child started by multiprocessing's spawn (``spawn_main`` in its command
  line); the other child is multiprocessing's resource tracker, which must go too.

A zombie counts as gone: it holds no memory, no GPU context and no file, and in containers
whose PID 1 does not reap, orphaned zombies stay forever. Exit statuses come from tmux, or
from the zombie's /proc stat when tmux has not collected it.

A few app starts of a couple of seconds each (the engine imports torch); waits are bounded by
deadlines, never fixed sleeps.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import pty
import re
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest
from support.paths import REPO
from support.processes import alive, children, cmdline, engine_of, zombie_exit
from support.waiting import wait_until

ARGS = ["--device", "cpu", "--batch", "1", "--heads", "2", "--seq", "64", "--head-dim", "32"]
LIVE = re.compile(r"eager\s+[\d.,]+ (µs|ms)")
LIVE_TIMEOUT_S = 60.0
GONE_TIMEOUT_S = 10.0
RESTART_TIMEOUT_S = 30.0

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; PR_SET_PDEATHSIG is Linux-only"),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (a real terminal for the app)"),
]

_sessions = itertools.count()


def assert_all_gone(pids: set[int], what: str) -> None:
    wait_until(lambda: not any(alive(p) for p in pids), GONE_TIMEOUT_S,
             f"{what}: still running: " + ", ".join(f"{p} {cmdline(p)[:80]!r}" for p in pids if alive(p)))


def kill_quietly(pids: set[int]) -> None:
    for pid in pids:
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# ------------------------------------------------------------------------------ the terminal
class TmuxApp:
    """The app in a tmux pane of a private tmux server; the pane stays after the app exits
    (remain-on-exit) so its screen and exit status can be read, unless the session is killed."""

    def __init__(self, tmp_path: Path) -> None:
        self.server: subprocess.Popen[bytes] | None = None
        self.socket = f"sdpa-lifecycle-{os.getpid()}-{next(_sessions)}"
        self.target = "app"
        self.config = tmp_path / "tmux.conf"
        self.config.write_text("set-option -g remain-on-exit on\n")
        self.export_dir = tmp_path / "exports"
        self.log = tmp_path / "terminal.log"
        self.ui_pid = 0
        self.socket_path = ""
        self.seen: set[int] = set()  # every process of the app's tree seen so far

    def tmux(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run(["tmux", "-L", self.socket, "-f", str(self.config), *args],
                              capture_output=True, text=True, timeout=30)
        if check and proc.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout

    def start_server(self) -> None:
        """The server runs in the foreground (``-D``) as this test's child: in some containers
        (CI's among them) the daemon a first client forks dies at once ("server exited
        unexpectedly"). Ready once a client's ``list-sessions`` is answered."""
        self.server = subprocess.Popen(["tmux", "-L", self.socket, "-f", str(self.config), "-D"],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, start_new_session=True)

        def answering() -> bool:
            if self.server is not None and self.server.poll() is not None:
                raise AssertionError(f"the tmux server exited with status {self.server.returncode}")
            return subprocess.run(["tmux", "-L", self.socket, "list-sessions"], capture_output=True,
                                  timeout=30).returncode == 0

        wait_until(answering, 10.0, "the private tmux server answering", every=0.05)

    def start(self) -> None:
        self.start_server()
        argv = [sys.executable, "-m", "sdpa_tui", *ARGS, "--export-dir", str(self.export_dir)]
        # COLUMNS/LINES (set by some shells and CI runners) would override the pty's size
        command = f"exec env -u COLUMNS -u LINES PYTHONPATH={shlex.quote(str(REPO))} " + shlex.join(argv)
        self.tmux("new-session", "-d", "-s", self.target, "-x", "120", "-y", "40", "-c", str(REPO), command)
        pid, _, self.socket_path = self.tmux("display-message", "-p", "-t", self.target,
                                             "#{pane_pid} #{socket_path}").strip().partition(" ")
        self.ui_pid = int(pid)
        self.seen.add(self.ui_pid)
        # what the app writes to its terminal, as bytes (the screen alone cannot tell whether
        # the terminal was given back: tmux redraws a dead pane its own way)
        self.tmux("pipe-pane", "-t", self.target, "-o", f"cat >> {shlex.quote(str(self.log))}")

    def terminal_output(self) -> bytes:
        return self.log.read_bytes() if self.log.exists() else b""

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.target, check=False)

    def engine(self) -> int | None:
        pid = engine_of(self.ui_pid)
        if pid:
            self.seen.add(pid)
        return pid

    def tree(self) -> set[int]:
        """The UI, every child it has now (engine, resource tracker) and theirs (the engine's
        profiler process)."""
        now = {self.ui_pid, *children(self.ui_pid)}
        now |= {grandchild for child in now - {self.ui_pid} for grandchild in children(child)}
        self.seen |= now
        return now

    def wait_live(self) -> int:
        """Wait for live numbers; return the engine's pid."""
        try:
            wait_until(lambda: LIVE.search(self.screen()), LIVE_TIMEOUT_S, "live numbers on the screen", every=0.2)
        except AssertionError:
            raise AssertionError("no live numbers; the screen:\n" + self.screen()) from None
        return wait_until(self.engine, 5.0, "one engine process under the UI")

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.target, *keys)

    def exit_status(self) -> int:
        """The UI's exit status: from tmux, or from its zombie when tmux has not collected it
        (tmux sometimes marks the pane dead long before it reaps the process)."""
        def ended() -> tuple[str, int] | None:
            how = zombie_exit(self.ui_pid)
            if how is not None:
                return how
            dead, status, sig = (self.tmux("display-message", "-p", "-t", self.target,
                                           "#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}",
                                           check=False).strip().split(":") + ["", "", ""])[:3]
            if dead == "1" and status.isdigit():
                return ("status", int(status))
            if dead == "1" and sig.isdigit():
                return ("signal", int(sig))
            return None

        how, value = wait_until(ended, GONE_TIMEOUT_S, "the UI's exit status")
        assert how == "status", f"the UI did not exit: it was killed by signal {value}"
        return value

    def close(self) -> None:
        self.tmux("kill-server", check=False)
        if self.server is not None:
            try:
                self.server.wait(timeout=GONE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()
        kill_quietly(self.seen)
        if self.socket_path:  # tmux 3.3 leaves its socket file behind
            Path(self.socket_path).unlink(missing_ok=True)


@pytest.fixture
def app(tmp_path: Path):
    running = TmuxApp(tmp_path)
    try:
        running.start()
        yield running
    finally:
        running.close()


# -------------------------------------------------------------------------------- the tests
@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_signal_ends_the_app_cleanly_and_stops_the_engine(app: TmuxApp, sig: signal.Signals) -> None:
    app.wait_live()
    tree = app.tree()
    assert app.engine() in tree
    os.kill(app.ui_pid, sig)
    assert_all_gone(tree, f"after {sig.name} to the UI")
    # the orderly exit, not death by the signal: exit status 128+n (a death by the signal
    # has none), the terminal given back (alternate screen left), then the goodbye line
    assert app.exit_status() == 128 + sig
    goodbye = f"{sig.name} received: engine stopped".encode()
    output = wait_until(lambda: next((o for o in [app.terminal_output()] if goodbye in o), None),
                      GONE_TIMEOUT_S, "the goodbye line in the terminal")
    assert output.rfind(b"\x1b[?1049l") < output.rfind(goodbye), "the alternate screen was not left"


def test_closing_the_terminal_stops_everything(app: TmuxApp) -> None:
    """tmux kill-session closes the pty master, as sshd does when the connection drops."""
    app.wait_live()
    tree = app.tree()
    app.tmux("kill-session", "-t", app.target)
    assert_all_gone(tree, "after the terminal closed")


@pytest.mark.parametrize("key", ["q", "C-c"], ids=["q", "ctrl+c"])
def test_quit_keys_stop_everything_with_status_0(app: TmuxApp, key: str) -> None:
    """Textual 8 binds ctrl+c to a 'press ctrl+q to quit' notice; sdpa-tui makes it quit."""
    app.wait_live()
    tree = app.tree()
    app.send(key)
    assert_all_gone(tree, f"after {key}")
    assert app.exit_status() == 0


def test_a_killed_engine_is_restarted_and_history_kept(app: TmuxApp) -> None:
    first = app.wait_live()
    os.kill(first, signal.SIGKILL)
    died = wait_until(lambda: next((s for s in [app.screen()] if "engine died" in s), None),
                    GONE_TIMEOUT_S, "'engine died' on the screen")
    assert alive(app.ui_pid)
    assert LIVE.search(died), "the numbers measured before the crash were dropped:\n" + died
    second = wait_until(lambda: next((e for e in [app.engine()] if e and e != first), None),
                      RESTART_TIMEOUT_S, "a new engine process")

    def live_again() -> bool:  # the header and status line no longer speak of the death
        screen = app.screen()
        return bool(LIVE.search(screen) and "engine ready" in screen
                    and "died" not in screen and "restarting" not in screen)

    try:
        wait_until(live_again, RESTART_TIMEOUT_S, "live again after the restart", every=0.2)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the screen:\n{app.screen()}") from None
    assert alive(app.ui_pid) and alive(second)
    tree = app.tree()
    app.send("q")
    assert_all_gone(tree, "after q, following a restart")
    assert app.exit_status() == 0


def test_the_profiler_process_goes_with_its_engine_and_q_leaves_none(app: TmuxApp) -> None:
    engine = app.wait_live()
    profiler = wait_until(lambda: next(iter(c for c in children(engine) if "profiler_process" in cmdline(c)), None),
                        LIVE_TIMEOUT_S, "the engine's profiler process (kernel capture)")
    os.kill(engine, signal.SIGKILL)
    assert_all_gone({profiler}, "the profiler process after its engine was killed (PR_SET_PDEATHSIG)")
    second = wait_until(lambda: next((e for e in [app.engine()] if e and e != engine), None),
                      RESTART_TIMEOUT_S, "a new engine process")
    wait_until(lambda: next(iter(c for c in children(second) if "profiler_process" in cmdline(c)), None),
             LIVE_TIMEOUT_S, "the new engine's profiler process")
    tree = app.tree()
    app.send("q")
    assert_all_gone(tree, "after q: UI, engine and profiler process")
    assert app.exit_status() == 0


def test_a_killed_ui_takes_the_engine_with_it(app: TmuxApp) -> None:
    """Nothing runs in the UI after SIGKILL: PR_SET_PDEATHSIG ends the engine. The pane
    stays (remain-on-exit), so the terminal does not hang up: only the death signal acts."""
    engine = app.wait_live()
    tree = app.tree()
    os.kill(app.ui_pid, signal.SIGKILL)
    assert_all_gone({engine}, "the engine after its UI was killed")
    assert_all_gone(tree, "after the UI was killed")


def test_a_terminal_that_goes_away_without_a_signal_ends_the_app(tmp_path: Path) -> None:
    """The app's pty is not its controlling terminal here, so closing it sends no SIGHUP:
    the app has to notice the hang-up itself (input hung up, writes failing with EIO).
    Without that, Textual's output thread dies on EIO, its input thread spins, and the app
    and engine run on with no terminal."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(TERM="xterm-256color", PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "sdpa_tui", *ARGS, "--export-dir", str(tmp_path / "exports")],
        stdin=slave, stdout=slave, stderr=slave, cwd=REPO, env=env, start_new_session=True,
    )
    os.close(slave)
    output = bytearray()

    def drain() -> None:  # a terminal reads what the app writes, or the app would block
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            output.extend(data)

    threading.Thread(target=drain, daemon=True).start()
    ansi = re.compile(r"\x1b\[[0-9;?<>=$]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")
    seen = {proc.pid}
    try:
        wait_until(lambda: LIVE.search(ansi.sub("", output.decode("utf-8", "replace"))),
                 LIVE_TIMEOUT_S, "live numbers in the app's output", every=0.2)
        engine = wait_until(lambda: engine_of(proc.pid), 5.0, "one engine process under the UI")
        tree = {proc.pid, *children(proc.pid)}
        seen |= tree
        os.close(master)
        master = -1
        assert proc.wait(GONE_TIMEOUT_S) == 128 + signal.SIGHUP
        assert_all_gone(tree - {proc.pid} | {engine}, "after the terminal went away")
    finally:
        if master >= 0:
            os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_quietly(seen)


_STUCK_EXIT = """
import os, signal, sys, time
from sdpa_tui.ui.terminal.exit_signals import exit_on_signals

class Engine:
    def kill_engine(self):
        open(sys.argv[1], "w").write("killed")

class StuckApp:  # asked to exit, never does (a hung shutdown)
    engine = Engine()
    def request_exit(self, code, reason):
        print("asked", code, reason, flush=True)

with exit_on_signals(StuckApp(), force_after_s=0.5):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)
print("not forced", flush=True)
"""


def test_a_stuck_exit_is_forced_and_kills_the_engine(tmp_path: Path) -> None:
    """The last resort behind the signal handler: when the orderly exit hangs, the engine is
    killed and the process ends anyway, with the signal's exit status."""
    marker = tmp_path / "engine-killed"
    proc = subprocess.run([sys.executable, "-c", _STUCK_EXIT, str(marker)], cwd=REPO, capture_output=True,
                          text=True, timeout=20, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert "asked 143 SIGTERM received" in proc.stdout and "not forced" not in proc.stdout
    assert marker.read_text() == "killed"
