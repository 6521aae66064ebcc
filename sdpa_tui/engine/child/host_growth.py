"""How much the engine's host memory grew, less what first uses loaded (``--engine-memory-mib``).

On the H100 (2026-11-23 soak, docs/lab-notes/faults.md) the timing engine's RSS stepped up the first time
it ran something it had not run before (causal +12 to +42 MiB, a new dtype +95 MiB, fwd+bwd +53
MiB: the kernels and libraries loaded on first use) and stayed flat while it ran a workload
again. Those steps are paid once per process: a fresh engine pays them again, so
replacing an engine for them gains nothing. This meter counts them out: growth is measured
against a baseline that each first use raises by what the process grew while it settled.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable


class HostGrowth:
    """The baseline and the first uses of one engine process."""

    def __init__(self) -> None:
        self.baseline_mib: float | None = None
        self._first_use_from: float | None = None  # RSS when a first use began, until it settles
        self._seen: set[Hashable] = set()

    def starting(self, use: Hashable, rss_mib: Callable[[], float | None]) -> None:
        """The engine sets up ``use`` (a workload, or a workload and backend): the first time, a
        first use begins, and what the process grows until it settles is not counted. Before the
        baseline there is nothing to discount."""
        if use in self._seen:
            return
        self._seen.add(use)
        if self.baseline_mib is not None and self._first_use_from is None:
            self._first_use_from = rss_mib()

    def growth(self, rss: float, settled: bool) -> float | None:
        """Growth since the baseline, first uses counted out; None while it cannot be told: before
        the engine first settled (the baseline is taken then) or while a first use still loads."""
        if not settled:
            return None
        if self.baseline_mib is None:
            self.baseline_mib = rss
        elif self._first_use_from is not None:
            self.baseline_mib += max(0.0, rss - self._first_use_from)
        self._first_use_from = None
        return rss - self.baseline_mib
