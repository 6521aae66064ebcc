"""Snapshots: one new directory holding everything seen so far, written whole or not at all.

A snapshot is built in a hidden staging directory inside ``base_dir``
(``.snapshot-<random>.partial``) and renamed to ``snapshot-YYYYmmdd-HHMMSS`` (``-2``, ``-3``...
when that name is taken) once every file is on disk, so a reader never sees half of one and
nothing that exists is ever overwritten. It is two-phase because the engine process writes the
per-backend Chrome traces into the staging directory while the snapshot is being built::

    writer = SnapshotWriter.begin(base_dir)
    ... the engine writes trace-<BACKEND>.json into writer.staging_dir ...
    path = writer.finish(session, gpu=gpu_snapshot, screen_svg=svg_text)

Any failure to write raises :class:`SnapshotError` with a plain-words message, after the staging
directory is removed: no partial files stay behind and the session is untouched, so the user can
retry. No Textual here: the UI passes the screen as SVG text.
"""

from __future__ import annotations

import errno
import json
import math
import os
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

from ...core.backends import Backend
from ...core.lab.session import Session
from ...telemetry.gpu_snapshot import GpuSnapshot
from ..files.document_files import SNAPSHOT_JSON, UnreadableDocument, read_document
from ..files.durable_fs import fsync_dir, rename_noreplace, write_file
from .history_csv import history_csv_text, history_dict
from .report_data import SCHEMA_VERSION, report_dict
from .report_tables import markdown_report

KIND = "snapshot"
REPORT_MD = "report.md"
HISTORY_CSV = "history.csv"
SCREEN_SVG = "screen.svg"
TRACE_PREFIX, TRACE_SUFFIX = "trace-", ".json"
STAGING_PREFIX, STAGING_SUFFIX = ".snapshot-", ".partial"
DIR_PREFIX = "snapshot-"
DIR_TIME_FORMAT = "%Y%m%d-%H%M%S"

#: The ``schema_version`` values :func:`read_snapshot` accepts. Version 2 added ``dispatch.faster``
#: and ``p10`` in each clock's summary; a version 1 document lacks them and is otherwise the same.
SUPPORTED_SCHEMA_VERSIONS: frozenset[int] = frozenset({1, SCHEMA_VERSION})

_MAX_SUFFIX = 10_000

#: Wall clock used to name the directory (tests replace it).
_clock = time.time


class SnapshotError(Exception):
    """A snapshot could not be written or read; ``str()`` says why in plain words."""

    def __init__(self, message: str, path: str | os.PathLike | None = None) -> None:
        super().__init__(message)
        self.path = Path(path) if path is not None else None


def _reason(exc: BaseException) -> str:
    """The OS's words for an error ("Permission denied"), without errno numbers or paths."""
    if isinstance(exc, OSError) and exc.strerror:
        return str(exc.strerror)
    return str(exc) or type(exc).__name__


def _write_error(base_dir: Path, exc: BaseException) -> SnapshotError:
    return SnapshotError(f"cannot write snapshot to {base_dir}: {_reason(exc)}", base_dir)


def _json_safe(value: Any) -> Any:
    """Plain JSON: NaN and infinities (not valid JSON) become ``null``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return [_json_safe(v) for v in sorted(value, key=repr)]
    if isinstance(value, Backend):
        return value.value
    return value


def _candidate_names(stem: str):
    yield stem
    for n in range(2, _MAX_SUFFIX + 1):
        yield f"{stem}-{n}"


# -- the writer -------------------------------------------------------------------------------
class SnapshotWriter:
    """One snapshot being built; see the module docstring."""

    def __init__(self, base_dir: Path, staging_dir: Path, started: float) -> None:
        self.base_dir = base_dir
        self.staging_dir = staging_dir
        self.started = started  # when the snapshot was asked for (names the directory)
        self.path: Path | None = None  # the final directory, once finished

    @classmethod
    def begin(cls, base_dir: str | os.PathLike) -> SnapshotWriter:
        """Create ``base_dir`` (and its parents) if missing, and a hidden staging directory in it."""
        base = Path(base_dir).expanduser()
        started = _clock()
        try:
            if base.exists() and not base.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(base))
            base.mkdir(parents=True, exist_ok=True)
            while True:
                staging = base / f"{STAGING_PREFIX}{secrets.token_hex(6)}{STAGING_SUFFIX}"
                try:
                    staging.mkdir()
                    break
                except FileExistsError:
                    continue
        except OSError as exc:
            raise _write_error(base, exc) from exc
        return cls(base, staging, started)

    # -- while building --------------------------------------------------------------------
    @property
    def active(self) -> bool:
        """True until :meth:`finish` succeeded or :meth:`abort` was called."""
        return self.path is None and self.staging_dir.is_dir()

    def trace_path(self, backend: Backend | str) -> Path:
        """Where the Chrome trace of ``backend`` goes: ``<staging>/trace-<BACKEND>.json``."""
        name = backend.value if isinstance(backend, Backend) else str(backend)
        return self.staging_dir / f"{TRACE_PREFIX}{name}{TRACE_SUFFIX}"

    def trace_files(self) -> list[str]:
        """Names of the trace files in the staging directory so far, sorted."""
        return sorted(
            p.name
            for p in self.staging_dir.iterdir()
            if p.name.startswith(TRACE_PREFIX) and p.name.endswith(TRACE_SUFFIX) and p.is_file()
        )

    # -- ending ----------------------------------------------------------------------------
    def finish(
        self,
        session: Session,
        gpu: GpuSnapshot | None = None,
        screen_svg: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Path:
        """Write the files, then move the staging directory to its final name; return that path.

        On failure the staging directory is removed and :class:`SnapshotError` raised; the
        session is only read, so the user can simply try again.
        """
        if self.path is not None:
            raise SnapshotError(f"this snapshot was already written to {self.path}", self.path)
        try:
            if not self.staging_dir.is_dir():
                raise FileNotFoundError(
                    errno.ENOENT, "the snapshot's staging directory has gone", str(self.staging_dir)
                )
            traces = self.trace_files()
            document = self._document(session, gpu, traces, extra, screen_svg is not None)
            text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
            write_file(self.staging_dir / SNAPSHOT_JSON, text)
            write_file(self.staging_dir / REPORT_MD, markdown_report(session))
            write_file(self.staging_dir / HISTORY_CSV, history_csv_text(session.history()), newline="")
            if screen_svg is not None:
                write_file(self.staging_dir / SCREEN_SVG, screen_svg)
            fsync_dir(self.staging_dir)
            final = self._publish()
        except OSError as exc:
            error = _write_error(self.base_dir, exc)
            self._remove_staging(error)
            raise error from exc
        except BaseException:
            self._remove_staging()
            raise
        self.path = final
        return final

    def abort(self) -> None:
        """Drop the snapshot: remove the staging directory and everything in it (idempotent)."""
        if self.path is None:
            self._remove_staging()

    def __enter__(self) -> SnapshotWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.abort()

    # -- inside ----------------------------------------------------------------------------
    def _document(
        self,
        session: Session,
        gpu: GpuSnapshot | None,
        traces: list[str],
        extra: dict[str, Any] | None,
        with_screen: bool,
    ) -> dict[str, Any]:
        document = report_dict(session)
        document["kind"] = KIND
        document["gpu"] = gpu.to_dict() if gpu is not None else None
        document["history"] = [history_dict(row) for row in session.history()]
        document["logs"] = list(session.logs)
        document["traces"] = traces
        document["files"] = [SNAPSHOT_JSON, REPORT_MD, HISTORY_CSV] + ([SCREEN_SVG] if with_screen else [])
        if extra:
            document["extra"] = dict(extra)
        return _json_safe(document)

    def _publish(self) -> Path:
        stem = DIR_PREFIX + time.strftime(DIR_TIME_FORMAT, time.localtime(self.started))
        for name in _candidate_names(stem):
            target = self.base_dir / name
            if os.path.lexists(target):
                continue
            try:
                rename_noreplace(self.staging_dir, target)
            except FileExistsError:
                continue  # appeared meanwhile: take the next suffix
            fsync_dir(self.base_dir)
            return target
        raise FileExistsError(errno.EEXIST, f"{stem} and {_MAX_SUFFIX - 1} numbered variants all exist")

    def _remove_staging(self, error: SnapshotError | None = None) -> None:
        shutil.rmtree(self.staging_dir, ignore_errors=True)
        if error is not None and os.path.lexists(self.staging_dir):
            error.args = (f"{error.args[0]} (could not remove {self.staging_dir})",)


def write_snapshot(
    base_dir: str | os.PathLike,
    session: Session,
    gpu: GpuSnapshot | None = None,
    screen_svg: str | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write a snapshot without traces in one go (:meth:`SnapshotWriter.begin` + ``finish``)."""
    return SnapshotWriter.begin(base_dir).finish(session, gpu=gpu, screen_svg=screen_svg, extra=extra)


# -- reading back -----------------------------------------------------------------------------
def read_snapshot(path: str | os.PathLike) -> dict[str, Any]:
    """Read ``snapshot.json`` (``path`` is the snapshot directory or the file) and check it.

    Raises :class:`SnapshotError` for a missing or unreadable file, invalid JSON, a schema
    version this sdpa-tui does not know, or a JSON document that is not a snapshot.
    """
    try:
        file, document = read_document(path)
    except UnreadableDocument as exc:
        raise SnapshotError(f"no snapshot: {exc}" if exc.missing else str(exc), exc.file) from None
    if not isinstance(document, dict):
        raise SnapshotError(f"{file} is not a snapshot: expected a JSON object", file)
    version = document.get("schema_version")
    known = " and ".join(str(v) for v in sorted(SUPPORTED_SCHEMA_VERSIONS))
    if isinstance(version, bool) or not isinstance(version, int):
        raise SnapshotError(
            f"{file} is not a snapshot: schema_version is {'missing' if version is None else repr(version)}",
            file,
        )
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        raise SnapshotError(
            f"{file} has schema version {version}; this sdpa-tui reads versions {known}", file
        )
    if document.get("kind") != KIND:
        raise SnapshotError(
            f"{file} is not a snapshot: kind is {document.get('kind')!r}, expected {KIND!r}", file
        )
    return document
