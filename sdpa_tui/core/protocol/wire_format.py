"""The wire format of the records between the UI and the measuring engine: JSON, versioned.

Each message carries the protocol version; a peer speaking another version is refused.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any

from ..backends import Backend
from ..workload import Workload
from .engine_commands import CaptureKernels, CaptureTraces, Configure, SetPaused, Shutdown
from .records import (
    Accuracy,
    BackendStatus,
    Dispatch,
    EngineError,
    EngineHealth,
    Environment,
    GraphKernels,
    KernelCapture,
    KernelInfo,
    Log,
    PeakFlops,
    Ready,
    Recycling,
    Sample,
    StartupTimes,
    TracesCaptured,
)

PROTOCOL_VERSION = 1


class ProtocolError(ValueError):
    """A message that is not a record of this protocol version."""


RECORD_TYPES = {
    cls.TYPE: cls
    for cls in (
        Configure,
        SetPaused,
        CaptureTraces,
        CaptureKernels,
        Shutdown,
        Ready,
        BackendStatus,
        Sample,
        KernelCapture,
        GraphKernels,
        Dispatch,
        PeakFlops,
        Accuracy,
        TracesCaptured,
        Log,
        EngineError,
        Recycling,
        EngineHealth,
        StartupTimes,
    )
}


def _plain(value: Any) -> Any:
    if isinstance(value, Backend):
        return value.value
    if isinstance(value, Workload):
        return value.to_dict()
    if isinstance(value, (KernelInfo, Environment)):
        return {k: _plain(v) for k, v in asdict(value).items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def encode(record: Any) -> bytes:
    """Serialise a record to JSON bytes."""
    body = {f.name: _plain(getattr(record, f.name)) for f in fields(record)}
    return json.dumps({"type": record.TYPE, "v": PROTOCOL_VERSION, "body": body}).encode()


def decode(data: bytes) -> Any:
    """Parse JSON bytes back into a record, checking type and version."""
    try:
        msg = json.loads(data)
        kind, version, body = msg["type"], msg["v"], msg["body"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ProtocolError(f"not a record: {exc}") from exc
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"protocol version {version}, expected {PROTOCOL_VERSION}")
    cls = RECORD_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ProtocolError(f"unknown record type {kind!r}")
    try:
        return cls(**{f.name: _typed(f.name, body[f.name]) for f in fields(cls) if f.name in body})
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"bad {kind} record: {exc}") from exc


def _typed(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in ("backend", "choice"):
        return Backend(value)
    if name in ("enabled", "effective", "priority"):
        return tuple(Backend(v) for v in value)
    if name == "workload":
        return Workload.from_dict(value)
    if name == "environment":
        return Environment.from_dict(value)
    if name == "kernels":
        return tuple(KernelInfo.from_dict(k) for k in value)
    if isinstance(value, list):
        return tuple(value)
    return value
