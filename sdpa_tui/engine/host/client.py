"""The UI side of the engine: start the child process, talk to it, stop it. Imports no torch."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from typing import Any

from ...core.protocol.engine_commands import Shutdown
from ..child.worker import main as worker_main
from ..record_pipe import Channel, ChannelClosed


def child_pids(pid: int) -> tuple[int, ...]:
    """The children of ``pid``, whichever of its threads started them (Linux /proc; none elsewhere or once it is
    gone): a report measuring several GPUs starts each engine from its own thread."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return ()
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                found.extend(int(p) for p in f.read().split())
        except (OSError, ValueError):
            continue
    return tuple(dict.fromkeys(found))


def descendants(pid: int) -> frozenset[int]:
    """``pid``'s children, their children and so on: this process's engines and their profiler processes."""
    seen: set[int] = set()
    todo = list(child_pids(pid))
    while todo:
        child = todo.pop()
        if child not in seen:
            seen.add(child)
            todo.extend(child_pids(child))
    return frozenset(seen)


class EngineClient:
    """One engine process for one device.

    ``send`` and ``receive`` never raise when the engine has died: ``alive`` turns False
    and ``exit_code`` says how it ended, so the caller can restart it.
    """

    def __init__(self, device: str = "auto") -> None:
        self.device = device
        self._process: mp.process.BaseProcess | None = None
        self._channel: Channel | None = None

    def start(self) -> None:
        ctx = mp.get_context("spawn")
        parent_conn, child_conn = ctx.Pipe(duplex=True)
        spawned_at = time.monotonic()  # where the engine's start-up phases count from (StartupTimes)
        self._process = ctx.Process(
            target=worker_main, args=(child_conn, self.device, spawned_at), name="sdpa-tui-engine", daemon=True
        )
        self._process.start()
        child_conn.close()
        self._channel = Channel(parent_conn)

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def pids(self) -> frozenset[int]:
        """The engine process and its children (its profiler process): what runs on the GPU for us."""
        pid = self.pid
        return frozenset((pid, *child_pids(pid))) if pid else frozenset()

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    @property
    def exit_code(self) -> int | None:
        return self._process.exitcode if self._process else None

    def send(self, record: Any) -> bool:
        if self._channel is None:
            return False
        try:
            self._channel.send(record)
            return True
        except ChannelClosed:
            return False

    def receive(self, timeout: float = 0.0) -> list[Any]:
        """Records waiting now; empty when there are none or the engine is gone."""
        if self._channel is None:
            return []
        try:
            return self._channel.receive_all(timeout)
        except ChannelClosed:
            return []

    def stop(self, timeout: float = 5.0) -> None:
        """Ask the engine to exit, then make sure it has (terminate, then kill)."""
        if self._process is None or self._process.pid is None:  # never started
            return
        self.send(Shutdown())
        self._process.join(timeout)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(2.0)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(2.0)
        if self._channel is not None:
            self._channel.close()
        self._channel = None

    def kill(self) -> None:
        """End the engine at once (used when it hangs or for fault tests)."""
        if self._process is not None and self._process.is_alive():
            self._process.kill()
            self._process.join(2.0)
