"""Two reports side by side, as data: what ``sdpa-tui compare A B`` prints.

A report is what ``sdpa-tui report --json`` writes or a snapshot's ``snapshot.json`` (the same
document with more in it). Both are read as plain JSON: another GPU, another torch version,
another day. Per backend the comparison says whether the main kernel changed, the ratio B / A of
each of the three clocks (above 1: B is slower), whether torch's eligibility verdict changed, and
whether SDPA's pick changed, and what differs between the environments that could be why. Schema
versions 1 and 2 are read (2 adds ``dispatch.faster``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.backends import ALL_BACKENDS, Backend
from ...core.status import Status
from ...core.traces.kernel_short_names import short_name
from ...core.workload import Workload, WorkloadError
from ..files.document_files import UnreadableDocument, read_document
from .environment_diff import environment_differences

READABLE_SCHEMA_VERSIONS: frozenset[int] = frozenset({1, 2})
READABLE_KINDS = (None, "report", "snapshot")  # report --json has no "kind"

CLOCKS: tuple[tuple[str, str], ...] = (("kernel", "kernel_us"), ("gpu", "gpu_us"), ("eager", "eager_us"))
"""The three clocks: their name in a comparison, and their median's key in a report's backend entry."""

DEFAULT_THRESHOLD = 0.10
"""A clock counts as slower when B / A exceeds 1 + this."""

UNKNOWN = "unknown"
_ELIGIBILITY_WORDS = {Status.OK: "eligible", Status.NOT_ELIGIBLE: "not eligible", Status.OOM: "out of memory",
                      Status.ERROR: "error"}


class ReportFileError(Exception):
    """A file that cannot be compared; ``str()`` is one line saying why."""


# -- reading ----------------------------------------------------------------------------------
def load_report(path: str | os.PathLike) -> dict[str, Any]:
    """Read and check a report or snapshot (a snapshot directory means its ``snapshot.json``)."""
    try:
        file, document = read_document(path)
    except UnreadableDocument as exc:
        raise ReportFileError(str(exc)) from None
    _check(file, document)
    return document


def _check(file: Path, document: Any) -> None:
    def bad(why: str) -> ReportFileError:
        return ReportFileError(f"{file} is not a report or snapshot of sdpa-tui: {why}")

    if not isinstance(document, dict):
        raise bad("expected a JSON object")
    if (document.get("tool") or {}).get("name") != "sdpa-tui":
        raise bad('no "tool": {"name": "sdpa-tui"}')
    if document.get("kind") not in READABLE_KINDS:
        raise bad(f"it is a {document.get('kind')!r} document")
    version = document.get("schema_version")
    if isinstance(version, bool) or version not in READABLE_SCHEMA_VERSIONS:
        known = " or ".join(str(v) for v in sorted(READABLE_SCHEMA_VERSIONS))
        raise ReportFileError(f"{file} has schema version {version!r}; this sdpa-tui compares version {known}")
    backends = document.get("backends")
    if not isinstance(backends, list) or not all(isinstance(b, dict) for b in backends):
        raise bad('"backends" is not a list of objects')
    names = {b.value for b in ALL_BACKENDS}
    for entry in backends:
        if entry.get("backend") not in names:
            raise bad(f"unknown backend {entry.get('backend')!r}")
    if not isinstance(document.get("workload"), dict) or not isinstance(document.get("dispatch"), dict):
        raise bad('no "workload" or "dispatch" object')


# -- the comparison ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Side:
    """Where one report comes from, in a line."""

    path: str
    device_name: str
    torch_version: str
    cudnn_version: str
    created: str
    workload: str
    schema_version: int

    @property
    def label(self) -> str:
        cudnn = f", cuDNN {self.cudnn_version}" if self.cudnn_version else ""
        return f"{self.device_name} · torch {self.torch_version}{cudnn} · {self.created or 'undated'}"


@dataclass(frozen=True)
class ClockChange:
    clock: str  # kernel | gpu | eager
    a_us: float | None
    b_us: float | None

    @property
    def ratio(self) -> float | None:
        """B / A: above 1, B is slower. None when either side has no number."""
        if not self.a_us or not self.b_us or self.a_us <= 0:
            return None
        return self.b_us / self.a_us


@dataclass(frozen=True)
class BackendChange:
    backend: Backend
    status: tuple[str, str]
    kernel: tuple[str | None, str | None]  # full names of the main kernels
    clocks: tuple[ClockChange, ...]
    eligibility: tuple[str, str]  # eligible | not eligible | out of memory | error | unknown
    eligibility_reason: tuple[str, str]

    @property
    def kernel_changed(self) -> bool:
        return self.kernel[0] != self.kernel[1]

    @property
    def eligibility_changed(self) -> bool:
        return self.eligibility[0] != self.eligibility[1] and UNKNOWN not in self.eligibility

    def slower(self, threshold: float) -> list[ClockChange]:
        """The clocks whose B / A is above ``1 + threshold``."""
        return [c for c in self.clocks if c.ratio is not None and c.ratio > 1 + threshold]


@dataclass(frozen=True)
class DispatchChange:
    choice: tuple[str | None, str | None]  # the backend SDPA picks (None: no kernel)
    faster: tuple[list[dict] | None, list[dict] | None]  # schema 2's dispatch.faster (None: not recorded)

    @property
    def changed(self) -> bool:
        return self.choice[0] != self.choice[1]


@dataclass(frozen=True)
class Comparison:
    a: Side
    b: Side
    backends: tuple[BackendChange, ...]
    dispatch: DispatchChange
    threshold: float
    environment: tuple[str, ...] = ()  # what differs between the environments, most likely cause first

    @property
    def workload_same(self) -> bool:
        return self.a.workload == self.b.workload

    def slower(self) -> list[tuple[Backend, ClockChange]]:
        return [(c.backend, clock) for c in self.backends for clock in c.slower(self.threshold)]

    @property
    def regressed(self) -> bool:
        """A clock of some backend got slower than the threshold (``compare`` exits 1)."""
        return bool(self.slower())


def compare_reports(a: dict[str, Any], b: dict[str, Any], threshold: float = DEFAULT_THRESHOLD,
                    a_path: str = "A", b_path: str = "B") -> Comparison:
    """Compare two checked documents (see :func:`load_report`)."""
    if not threshold >= 0:  # nan too
        raise ValueError(f"the threshold must be 0 % or more, got {threshold!r}")
    entries_a, entries_b = _entries(a), _entries(b)
    changes = []
    for backend in ALL_BACKENDS:
        ea, eb = entries_a.get(backend, {}), entries_b.get(backend, {})
        changes.append(BackendChange(
            backend=backend,
            status=(ea.get("status") or UNKNOWN, eb.get("status") or UNKNOWN),
            kernel=(ea.get("main_kernel"), eb.get("main_kernel")),
            clocks=tuple(ClockChange(name, _number(ea.get(key)), _number(eb.get(key))) for name, key in CLOCKS),
            eligibility=(eligibility_of(ea), eligibility_of(eb)),
            eligibility_reason=(_reason_of(ea), _reason_of(eb)),
        ))
    dispatch = DispatchChange(
        choice=(a["dispatch"].get("choice"), b["dispatch"].get("choice")),
        faster=(a["dispatch"].get("faster"), b["dispatch"].get("faster")),
    )
    differences = tuple(environment_differences(a.get("environment"), b.get("environment")))
    return Comparison(_side(a, a_path), _side(b, b_path), tuple(changes), dispatch, threshold, differences)


def eligibility_of(entry: dict[str, Any]) -> str:
    """Whether torch would run this backend on the workload, in words.

    Newer reports record it (probed even with the flag off); older ones only have the status.
    """
    verdict = entry.get("eligibility") or entry.get("status") or ""
    return _ELIGIBILITY_WORDS.get(verdict, UNKNOWN)


def _reason_of(entry: dict[str, Any]) -> str:
    if entry.get("eligibility"):
        return entry.get("eligibility_reason") or ""
    return entry.get("reason") or "" if entry.get("status") == Status.NOT_ELIGIBLE else ""


def _entries(document: dict[str, Any]) -> dict[Backend, dict[str, Any]]:
    return {Backend(e["backend"]): e for e in document["backends"]}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _side(document: dict[str, Any], path: str) -> Side:
    env = document.get("environment") or {}
    try:
        workload = Workload.from_dict(document["workload"]).describe()
    except (WorkloadError, TypeError):
        workload = json.dumps(document["workload"], sort_keys=True)
    return Side(
        path=path,
        device_name=env.get("device_name") or "unknown device",
        torch_version=env.get("torch_version") or "?",
        cudnn_version=env.get("cudnn_version") or "",
        created=document.get("created") or "",
        workload=workload,
        schema_version=document["schema_version"],
    )


def kernel_text(change: BackendChange) -> str:
    """'same: <short name>', 'changed: <a> → <b>', or '–' when neither ran a kernel."""
    a, b = (short_name(k) if k else "none" for k in change.kernel)
    if not change.kernel_changed:
        return "–" if change.kernel[0] is None else f"same: {a}"
    return f"changed: {a} → {b}"
