"""The background poller: one daemon thread reading a GPU through :class:`NvmlReader`.

NVML calls cost 1-2.6 ms each, so poll from :class:`GpuPoller`'s thread, never from the UI thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from .gpu_snapshot import GpuSnapshot
from .nvml import NvmlReader

log = logging.getLogger(__name__)


class GpuPoller:
    """Calls ``callback(snapshot)`` every ``interval`` seconds from a daemon thread.

    ``own_pids`` may be reassigned while running (e.g. when the engine process restarts).
    A reader the poller made itself is closed by ``stop()``.
    """

    def __init__(
        self,
        callback: Callable[[GpuSnapshot], None],
        interval: float = 1.0,
        reader: NvmlReader | None = None,
        index: int = 0,
        own_pids: Iterable[int] = (),
    ) -> None:
        self.callback = callback
        self.interval = interval
        self.reader = reader if reader is not None else NvmlReader(index)
        self._owns_reader = reader is None
        self.own_pids: frozenset[int] = frozenset(own_pids)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start polling (no-op when already running)."""
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="nvml-poller", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop and join the thread (a hung NVML call is left behind after ``timeout``)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self._thread = None
        if self._owns_reader and not (thread is not None and thread.is_alive()):
            self.reader.close()  # not while a hung call still holds the reader's lock

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            snap = self.reader.snapshot(self.own_pids)
            if self._stop.is_set():
                break
            try:
                self.callback(snap)
            except Exception:
                log.exception("GPU snapshot callback")
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))
