"""Medians and percentiles over a sliding window of samples."""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    """Median, 90th and 10th percentiles of a window of values, and how many there were.

    ``p10`` is None where it was not kept (documents written before it was).
    """

    median: float
    p90: float
    count: int
    p10: float | None = None

    @classmethod
    def of(cls, values: Iterable[float]) -> "Summary | None":
        data = sorted(v for v in values if v is not None)
        if not data:
            return None
        return cls(statistics.median(data), percentile(data, 90), len(data), percentile(data, 10))


def percentile(sorted_values: list[float], pct: float) -> float:
    """Linear-interpolated percentile of already sorted values (numpy's default method)."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    pos = (len(sorted_values) - 1) * pct / 100
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class Window:
    """The last ``size`` values of one clock."""

    def __init__(self, size: int = 50) -> None:
        self._values: deque[float] = deque(maxlen=size)

    def add(self, value: float | None) -> None:
        if value is not None:
            self._values.append(value)

    def extend(self, values: Iterable[float]) -> None:
        for v in values:
            self.add(v)

    def clear(self) -> None:
        self._values.clear()

    def values(self) -> list[float]:
        return list(self._values)

    def summary(self) -> Summary | None:
        return Summary.of(self._values)

    def __len__(self) -> int:
        return len(self._values)
