"""Keep an engine process running for a UI: read its records on a thread, restart it when it dies.

Imports no torch and no Textual: the UI hands in two callbacks, which are called from the
supervisor's thread (a Textual app passes ``post_message``, which is thread-safe).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ...core.protocol.engine_commands import Configure, SetPaused
from ...core.protocol.engine_events import EngineDied, EngineRecycled, EngineStarting
from ...core.protocol.records import EngineError, Ready, Recycling, Sample
from .client import EngineClient

BACKOFF_S = (1.0, 2.0, 5.0, 10.0, 30.0)
GIVE_UP_AFTER = 3
"""Deaths in a row on one configuration, with no sample in between, before we stop retrying."""


class EngineSupervisor:
    def __init__(
        self,
        device: str,
        on_records: Callable[[list[Any]], None],
        on_event: Callable[[Any], None],
        client_factory: Callable[[str], EngineClient] = EngineClient,
        backoff_s: tuple[float, ...] = BACKOFF_S,
    ) -> None:
        self.device = device
        self.on_records = on_records
        self.on_event = on_event
        self.client_factory = client_factory
        self.backoff_s = backoff_s
        self.client: EngineClient | None = None
        self._config: Configure | None = None
        self._paused = False
        self._stop = threading.Event()
        self._retry = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="sdpa-tui-engine-reader", daemon=True)
        self.deaths_in_a_row = 0
        self._switching = False

    # -- called from the UI ----------------------------------------------------------------
    def start(self) -> None:
        """Start the engine process (on the supervisor's thread); a second call does nothing, so
        the command line can start it before the UI's first frame and the app's mount again."""
        with self._lock:
            if self._thread.ident is not None:
                return
            self._thread.start()

    def configure(self, config: Configure) -> None:
        with self._lock:
            self._config = config
            self.deaths_in_a_row = 0
            client = self.client
        self._retry.set()  # a new configuration deserves a new try
        if client:
            client.send(config)

    def set_paused(self, paused: bool) -> None:
        with self._lock:
            self._paused = paused
            client = self.client
        if client:
            client.send(SetPaused(paused))

    def send(self, record: Any) -> bool:
        client = self.client
        return bool(client and client.send(record))

    @property
    def engine_pid(self) -> int | None:
        client = self.client
        return client.pid if client else None

    @property
    def engine_pids(self) -> frozenset[int]:
        """The engine and its profiler process, for NVML not to count them as other processes."""
        client = self.client
        return client.pids if client else frozenset()

    def kill_engine(self) -> None:
        """End the engine process now (it will be restarted like after a crash)."""
        client = self.client
        if client:
            client.kill()

    def switch_device(self, device: str) -> None:
        """Measure on ``device`` from now on: the running engine is stopped (on the supervisor's
        thread, not the caller's) and a fresh one starts there, with no backoff and no death."""
        with self._lock:
            self.device = device
            self._switching = True
            self.deaths_in_a_row = 0
        self._retry.set()

    def stop(self) -> None:
        self._stop.set()
        self._retry.set()
        self._thread.join(10.0)
        client = self.client
        if client:
            client.stop()

    # -- the supervisor thread -------------------------------------------------------------
    def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            attempt += 1
            self.on_event(EngineStarting(attempt))
            client = self.client_factory(self.device)
            recycling = None
            try:
                client.start()
                self.client = client
                last_error, recycling = self._pump(client)
            except Exception as exc:  # noqa: BLE001 - say it in the UI, then retry with backoff
                last_error = f"could not run the engine process: {type(exc).__name__}: {exc}"
            if self._stop.is_set():
                break
            if self._switching:  # not a death: the next engine starts on the new device at once
                self._switching = False
                client.stop(timeout=5.0)
                attempt = 0
                continue
            if recycling is not None:  # not a death: no backoff, and the new engine is attempt 1
                client.stop(timeout=5.0)
                self.on_event(EngineRecycled(recycling.rss_mib - recycling.baseline_mib))
                attempt = 0
                continue
            client.stop(timeout=1.0)
            self.deaths_in_a_row += 1
            message = last_error or f"the engine process ended (exit code {client.exit_code})"
            if self.deaths_in_a_row >= GIVE_UP_AFTER:
                self.on_event(EngineDied(client.exit_code, message, None))
                self._retry.clear()
                self._retry.wait()  # until the user changes the configuration or asks again
                self.deaths_in_a_row = 0
                continue
            delay = self.backoff_s[min(self.deaths_in_a_row - 1, len(self.backoff_s) - 1)]
            self.on_event(EngineDied(client.exit_code, message, delay))
            self._retry.clear()
            self._retry.wait(delay)

    def retry(self) -> None:
        self._retry.set()

    def _pump(self, client: EngineClient) -> tuple[str, Recycling | None]:
        """Forward records until the engine ends or we stop; return its last error message
        and, if it ended to be replaced, its Recycling record."""
        last_error, recycling = "", None
        while not self._stop.is_set() and not self._switching:
            records = client.receive(timeout=0.1)
            if records:
                for record in records:
                    if isinstance(record, Ready):
                        self._resend_state(client)
                    elif isinstance(record, EngineError):
                        last_error = record.message
                    elif isinstance(record, Sample):
                        self.deaths_in_a_row = 0
                    elif isinstance(record, Recycling):
                        recycling = record
                self.on_records(records)
            elif not client.alive:
                break
        return last_error, recycling

    def _resend_state(self, client: EngineClient) -> None:
        with self._lock:
            config, paused = self._config, self._paused
        if config is not None:
            client.send(config)
        if paused:
            client.send(SetPaused(True))
