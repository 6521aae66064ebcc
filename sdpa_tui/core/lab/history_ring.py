"""A backend's sample history, bounded however long the monitor runs: the newest samples at full resolution, the
older ones in a tail that starts at full resolution and is halved (every other one dropped) whenever it fills, so
``history.csv`` still covers the whole session and memory stays flat once ``RECENT + TAIL_MAX`` samples were taken (an
H100 soak added 5,031 rows in 8 minutes; a tail that kept one in 8 from the start reached the bound only after about
37,000 samples, hours on the CPU, and a 1-hour soak could not show the memory flat)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

RECENT = 4096
"""Samples kept at full resolution (minutes to an hour at the monitor's rates)."""
TAIL_MAX = 4096
"""Older samples kept, thinned: when this fills, every other one goes."""
TAIL_EVERY = 1
"""Of the samples leaving the recent part, one in this many enters the tail (at first; the tail thins as it fills)."""


class HistoryRing(Generic[T]):
    def __init__(self, recent: int = RECENT, tail_max: int = TAIL_MAX, tail_every: int = TAIL_EVERY) -> None:
        self._recent: deque[T] = deque()
        self._tail: list[T] = []
        self._limit, self._tail_max = recent, tail_max
        self._every = tail_every  # grows as the tail is thinned: the resolution of what enters matches it
        self._leaving = 0  # samples that left the recent part

    def append(self, row: T) -> None:
        self._recent.append(row)
        if len(self._recent) <= self._limit:
            return
        old = self._recent.popleft()
        if self._leaving % self._every == 0:
            self._tail.append(old)
            if len(self._tail) > self._tail_max:
                del self._tail[1::2]  # every other one: half the resolution, the whole span kept
                self._every *= 2
        self._leaving += 1

    @property
    def thinned(self) -> bool:
        """Some samples were left out (the older part is a sample of what was measured)."""
        return self._leaving > 0

    def __len__(self) -> int:
        return len(self._tail) + len(self._recent)

    def __iter__(self) -> Iterator[T]:
        yield from self._tail
        yield from self._recent

    def __reversed__(self) -> Iterator[T]:
        yield from reversed(self._recent)
        yield from reversed(self._tail)

    def __getitem__(self, index: int) -> T:
        if -len(self._recent) <= index < 0:
            return self._recent[index]
        return list(self)[index]
