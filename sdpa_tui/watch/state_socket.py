"""The watched process's states travel to the parent as JSON lines over a Unix socket.

The parent listens on a path it names in ``SDPA_TUI_WATCH_SOCKET``; every watched process
(the program, and a child it forks) opens its own connection, and each message carries its
pid, so forked children never write into their parent's stream.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
from collections.abc import Callable

from ..core.calls.watched_calls import ProcessState

SOCKET_ENV = "SDPA_TUI_WATCH_SOCKET"
REPRO_DIR_ENV = "SDPA_TUI_REPRO_DIR"  # the folder a call whose gradients are flagged is saved under
DEFAULT_REPRO_DIR = "sdpa-tui-repro"
HOOK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe", "hook")
"""Put on the program's ``PYTHONPATH``: its ``sitecustomize`` watches every Python process the program starts."""


class StateSender:
    """Child side: one connection per process; a failed send drops the channel, never the program."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._sock: socket.socket | None = None
        self._pid = -1
        self._lock = threading.Lock()

    def reset_after_fork(self) -> None:
        """In a forked child: a fresh lock (another thread may have held it) and, later, a fresh connection."""
        self._lock = threading.Lock()
        self._sock = None

    def send(self, state: ProcessState) -> None:
        line = (json.dumps(state.to_dict(), separators=(",", ":")) + "\n").encode()
        with self._lock:
            try:
                if self._sock is None or self._pid != os.getpid():
                    self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    self._sock.connect(self.path)
                    self._pid = os.getpid()
                self._sock.sendall(line)
            except OSError:
                self._sock = None


class StateListener:
    """Parent side: accepts every watched process's connection and keeps its latest state."""

    def __init__(self, on_state: Callable[[ProcessState], None]) -> None:
        self._dir = tempfile.mkdtemp(prefix="sdpa-tui-watch-")
        self.path = os.path.join(self._dir, "calls.sock")
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.path)
        self._server.listen(16)
        self._on_state = on_state
        self._threads: list[threading.Thread] = []
        self._closed = False
        self.errors: list[str] = []
        self._accepting = threading.Thread(target=self._accept, name="sdpa-tui-watch-accept", daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            reader = threading.Thread(target=self._read, args=(conn,), name="sdpa-tui-watch-read", daemon=True)
            reader.start()
            self._threads.append(reader)

    def _read(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as stream:
            for line in stream:
                try:
                    self._on_state(ProcessState.from_dict(json.loads(line)))
                except (ValueError, KeyError, TypeError) as exc:
                    self.errors.append(f"unreadable state from the watched program: {exc}")

    def drain(self, timeout_s: float = 2.0) -> None:
        """Wait for the readers to see their connections close (the program has exited)."""
        for reader in list(self._threads):
            reader.join(timeout_s)

    def close(self) -> None:
        self._closed = True
        try:
            self._server.close()
        finally:
            for name in (self.path,):
                try:
                    os.unlink(name)
                except OSError:
                    pass
            try:
                os.rmdir(self._dir)
            except OSError:
                pass
