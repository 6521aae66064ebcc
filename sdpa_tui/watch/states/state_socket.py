"""The watched process's states travel to the parent as JSON lines over a Unix socket.

The parent listens on a path it names in ``SDPA_TUI_WATCH_SOCKET``; every watched process
(the program, and a child it forks) opens its own connection, and each message carries its
pid, so forked children never write into their parent's stream.

The same lines reach ``sdpa-tui watch --attach ADDRESS`` from a process that watches itself with the Python API
(``watch(publish=ADDRESS)``): there the command listens, on a socket path or on ``HOST:PORT`` (TCP), and the
process's :class:`StatePublisher` connects, whenever the command is there, and sends its latest states.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable

from ...core.calls.watched_calls import ProcessState

SOCKET_ENV = "SDPA_TUI_WATCH_SOCKET"
PUBLISH_ENV = "SDPA_TUI_PUBLISH"
"""A block of the Python API (``with watch():``) publishes its states to this address where ``publish`` is not given."""
REPRO_DIR_ENV = "SDPA_TUI_REPRO_DIR"  # the folder a call whose gradients are flagged is saved under
DEFAULT_REPRO_DIR = "sdpa-tui-repro"
HOOK_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "probe", "hook")
"""Put on the program's ``PYTHONPATH``: its ``sitecustomize`` watches every Python process the program starts."""


def socket_address(address: str) -> tuple[socket.AddressFamily, str | tuple[str, int]]:
    """``HOST:PORT`` (TCP) or a socket's path (anything with a ``/``, or without a ``:``); ValueError for a port
    that is no number."""
    host, colon, port = address.rpartition(":")
    if "/" in address or not colon:
        return socket.AF_UNIX, address
    if not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{address!r}: expected HOST:PORT (a port from 0 to 65535) or a socket's path")
    return socket.AF_INET, (host.strip("[]") or "127.0.0.1", int(port))


class StateSender:
    """Child side: one connection per process; a failed send drops the channel, never the program. ``path``: the
    parent's socket, or :func:`socket_address`'s ``HOST:PORT``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._family, self._address = socket_address(path)
        self._sock: socket.socket | None = None
        self._pid = -1
        self._lock = threading.Lock()

    def reset_after_fork(self) -> None:
        """In a forked child: a fresh lock (another thread may have held it) and, later, a fresh connection."""
        self._lock = threading.Lock()
        self._sock = None

    def send(self, state: ProcessState) -> bool:
        """False when the state could not be sent (no one listens there now)."""
        line = (json.dumps(state.to_dict(), separators=(",", ":")) + "\n").encode()
        with self._lock:
            try:
                if self._sock is None or self._pid != os.getpid():
                    self._sock = socket.socket(self._family, socket.SOCK_STREAM)
                    self._sock.connect(self._address)
                    self._pid = os.getpid()
                self._sock.sendall(line)
                return True
            except OSError:
                if self._sock is not None:
                    self._sock.close()
                self._sock = None
                return False

    def close(self) -> None:
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None


class StatePublisher:
    """A block of the Python API's side of ``--attach``: every watched process's latest state, sent on to the
    command listening at ``address`` from a thread of its own; a command that comes (or comes back) later gets them
    all at its first connection, so it may start before, during or after the block."""

    RETRY_S = 0.5

    def __init__(self, address: str) -> None:
        self.sender = StateSender(address)
        self._latest: dict[int, ProcessState] = {}
        self._unsent: set[int] = set()
        self._connected = False
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sdpa-tui-publish", daemon=True)
        self._thread.start()

    def publish(self, state: ProcessState) -> None:
        with self._lock:
            self._latest[state.pid] = state
            self._unsent.add(state.pid)
        self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait(self.RETRY_S)
            self._wake.clear()
            stopping = self._stop.is_set()
            self.flush()
            if stopping:
                return

    def flush(self) -> None:
        """Send what the command has not had: every state after a new connection, else the changed ones."""
        with self._lock:
            pids = list(self._latest) if not self._connected else list(self._unsent)
            states = [self._latest[pid] for pid in pids]
            self._unsent.clear()
        for state in states:
            self._connected = self.sender.send(state)
            if not self._connected:
                with self._lock:
                    self._unsent.update(self._latest)
                return

    def close(self, timeout_s: float = 2.0) -> None:
        """Send what is left (the final states) once more, then stop."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout_s)
        self.sender.close()


class StateListener:
    """Parent side: accepts every watched process's connection and keeps its latest state. ``address``: where to
    listen (:func:`socket_address`; ``--attach``); None: a new socket in a temporary folder of its own."""

    def __init__(self, on_state: Callable[[ProcessState], None], address: str | None = None) -> None:
        family, where = socket_address(address) if address else (socket.AF_UNIX, "")
        self._dir = tempfile.mkdtemp(prefix="sdpa-tui-watch-") if address is None else ""
        self.path = os.path.join(self._dir, "calls.sock") if address is None else address
        self._server = socket.socket(family, socket.SOCK_STREAM)
        if family == socket.AF_INET:
            self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._server.bind(where or self.path)
        except OSError:
            self._server.close()
            raise
        self._unix = family == socket.AF_UNIX
        self._server.listen(16)
        self._on_state = on_state
        self._threads: list[threading.Thread] = []
        self._connections: list[socket.socket] = []
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
            self._connections.append(conn)
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
        """Wait for the readers to see their connections close (the program has exited), ``timeout_s`` in all."""
        deadline = time.monotonic() + timeout_s
        for reader in list(self._threads):
            reader.join(max(0.0, deadline - time.monotonic()))

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop listening and reading (a connection still open is shut: its process sends into the void), its threads
        ended within ``timeout_s``. The accepting thread ends first, so a connection it took meanwhile is shut too."""
        self._closed = True
        try:
            deadline = time.monotonic() + timeout_s
            _shut(self._server)  # wakes the thread blocked in accept()
            self._server.close()
            self._accepting.join(max(0.0, deadline - time.monotonic()))
            for conn in self._connections:
                _shut(conn)  # wakes its reader
            for thread in self._threads:
                thread.join(max(0.0, deadline - time.monotonic()))
        finally:
            if self._unix:
                try:
                    os.unlink(self.path)
                except OSError:
                    pass
            if self._dir:
                try:
                    os.rmdir(self._dir)
                except OSError:
                    pass


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
