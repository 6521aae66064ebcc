"""How much of the time the engine keeps the device busy: its measured time over wall time.

NVML's utilization is the share of its own sample window (1/6 s to 1 s, chosen by the
driver) in which any kernel of any process ran. The engine measures in slices and idles
between them (each backend is sampled a few times a second), so a reading can fall in a
gap. The engine says how long each slice kept the device busy (``Sample.busy_s``, from the
clocks it measured); this adds those up over a recent window, so the GPU panel can show how
much of the GPU's busy time is the engine's.
"""

from __future__ import annotations

from collections import deque

BUSY_WINDOW_S = 5.0


class BusyWindow:
    """Busy seconds of the engine's recent slices, by the wall time each slice ended."""

    def __init__(self, window_s: float = BUSY_WINDOW_S) -> None:
        self.window_s = window_s
        self._slices: deque[tuple[float, float]] = deque()

    def add(self, end_time: float, busy_s: float) -> None:
        self._slices.append((end_time, max(0.0, busy_s)))
        while self._slices and self._slices[0][0] < end_time - 2 * self.window_s:
            self._slices.popleft()

    def share(self) -> float | None:
        """Busy time over wall time in the last ``window_s`` up to the latest slice (0..1);
        None before any slice. Shorter at the start: the window begins where the first
        slice did."""
        if not self._slices:
            return None
        latest = self._slices[-1][0]
        first_end, first_busy = self._slices[0]
        start = max(latest - self.window_s, first_end - first_busy)
        span = latest - start
        if span <= 0:
            return 1.0 if first_busy > 0 else 0.0
        busy = sum(b for t, b in self._slices if t > start)
        return min(1.0, busy / span)
