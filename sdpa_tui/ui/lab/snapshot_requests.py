"""Snapshot and trace requests: the engine writes traces, then the snapshot is finished and renamed."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol

from ...core.lab.session import Session
from ...core.protocol.records import TracesCaptured
from ...exports.lab.snapshot_folder import SnapshotError, SnapshotWriter
from ...telemetry.gpu_snapshot import GpuSnapshot

TRACE_TIMEOUT_S = 60.0


class SnapshotHost(Protocol):
    """What the snapshot flow needs from the app (the app satisfies it; this module never
    imports the app, so the two do not import each other)."""

    gpu: GpuSnapshot | None

    @property
    def session(self) -> Session: ...

    def status(self, text: str, error: bool = False) -> None: ...

    def export_screenshot(self) -> str: ...

    def next_request_id(self) -> int: ...

    def send_capture(self, request_id: int, directory: str) -> bool: ...

    def set_timer(self, delay: float, callback: Callable[[], Any]) -> Any: ...


class SnapshotFlow:
    def __init__(self, app: SnapshotHost) -> None:
        self.app = app
        self.pending: dict[int, tuple[str, Any, str | None]] = {}

    def start(self, export_dir: str) -> None:
        try:
            writer = SnapshotWriter.begin(export_dir)
        except SnapshotError as exc:
            self.app.status(f"snapshot failed: {exc}", error=True)
            return
        svg = self.app.export_screenshot()
        request_id = self.app.next_request_id()
        if self.app.session.environment is None or not self.app.send_capture(request_id, str(writer.staging_dir)):
            self._finish(writer, svg, note=" (no traces: the engine is not running)")
            return
        self.pending[request_id] = ("snapshot", writer, svg)
        self.app.status("snapshot: capturing one trace per backend…")
        self.app.set_timer(TRACE_TIMEOUT_S, lambda: self._timeout(request_id))

    def expect_traces(self, request_id: int, directory: str) -> None:
        if not self.app.send_capture(request_id, directory):
            self.app.status("no trace: the engine is not running", error=True)
            return
        self.pending[request_id] = ("trace", directory, None)
        self.app.status(f"capturing traces into {directory}…")

    def traces_captured(self, record: TracesCaptured) -> None:
        entry = self.pending.pop(record.request_id, None)
        if entry is None:
            return
        kind, target, svg = entry
        note = f" (trace problems: {record.error})" if record.error else ""
        if kind == "snapshot":
            self._finish(target, svg, note)
        elif record.paths:
            names = ", ".join(os.path.basename(p) for p in record.paths)
            self.app.status(f"traces in {target}: {names} (open in Perfetto){note}", error=bool(record.error))
        else:
            self.app.status(f"no trace written{note or ': no backend is running'}", error=True)

    def _timeout(self, request_id: int) -> None:
        entry = self.pending.pop(request_id, None)
        if entry and entry[0] == "snapshot":
            self._finish(entry[1], entry[2], note=" (the engine did not deliver traces in time)")

    def _finish(self, writer: SnapshotWriter, svg: str | None, note: str = "") -> None:
        try:
            path = writer.finish(self.app.session, gpu=self.app.gpu, screen_svg=svg)
        except SnapshotError as exc:
            self.app.status(f"snapshot failed: {exc}; the data is still here, press s to retry", error=True)
            return
        self.app.status(f"snapshot saved to {path}{note}")
