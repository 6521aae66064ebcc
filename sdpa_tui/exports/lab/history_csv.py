"""The sample history as plain data: rows for ``snapshot.json`` and the text of ``history.csv``."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from typing import Any

from ...core.lab.backend_state import HistoryRow

#: The columns of ``history.csv`` and the keys of each ``"history"`` entry in ``snapshot.json``.
HISTORY_COLUMNS: tuple[str, ...] = (
    "time",
    "config_id",
    "backend",
    "workload",
    "gpu_us",
    "eager_us",
    "kernel_us",
    "conditions",
)


def _number(value: float | None) -> float | None:
    """A JSON-safe number: NaN and infinities become ``None``."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def history_dict(row: HistoryRow) -> dict[str, Any]:
    """One sample as JSON-ready data (``time`` is seconds since the epoch, as ``time.time()``)."""
    return {
        "time": _number(row.time),
        "config_id": row.config_id,
        "backend": row.backend.value,
        "workload": row.workload,
        "gpu_us": _number(row.gpu_us),
        "eager_us": _number(row.eager_us),
        "kernel_us": _number(row.kernel_us),
        "conditions": row.conditions,
    }


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def history_csv_text(rows: Iterable[HistoryRow]) -> str:
    """The CSV document: a header, then one line per sample; an unknown value is an empty cell."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(HISTORY_COLUMNS)
    for row in rows:
        data = history_dict(row)
        writer.writerow([_cell(data[name]) for name in HISTORY_COLUMNS])
    return buffer.getvalue()
