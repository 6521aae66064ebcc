"""Whether the host is busy beyond one program: the share of an interval in which some task waited for a CPU (the
kernel's pressure stall information, as ``host_cpu``) and the CPU time other processes used meanwhile.

A program's own threads that outnumber the cores make tasks wait too, and slow nothing that the program would not
slow itself; only while other processes use the CPUs as well do a watched call's times read high because of the
machine (a live watch showed 7.53 ms for calls the program timed at 13-23 µs).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .host_cpu import DISTURBED_AT_PERCENT, PSI_CPU

OTHERS_AT_CORES = 0.25
"""Other processes using at least this much of a core, while tasks waited, make the host busy beyond the program."""


@dataclass(frozen=True)
class BusyReading:
    """One interval: the share of it in which some task waited for a CPU, and the cores other processes used."""

    waited_pct: float
    others_cores: float

    @property
    def busy(self) -> bool:
        return self.waited_pct >= DISTURBED_AT_PERCENT and self.others_cores >= OTHERS_AT_CORES

    def note(self) -> str:
        """"" when the host is not busy beyond the program, else in words."""
        if not self.busy:
            return ""
        return (f"the CPUs were busy beyond the program (tasks waited for a core {self.waited_pct:.0f}% of the time, "
                f"other processes used {self.others_cores:.1f} cores)")

    def short(self) -> str:
        """The same in a few words, for a banner: "" when not busy."""
        return f"tasks waited {self.waited_pct:.0f}%, others used {self.others_cores:.1f} cores" if self.busy else ""


class HostBusy:
    """Reads :class:`BusyReading` over the interval since the last :meth:`read` (the first read only starts one)."""

    def __init__(self, proc: str = "/proc", psi: str = PSI_CPU, clock: Callable[[], float] = time.monotonic) -> None:
        self.proc, self.psi, self.clock = proc, psi, clock
        self.ticks = os.sysconf("SC_CLK_TCK")
        self._last: tuple[float, int, int, dict[int, int]] | None = None

    def read(self, program_pids: Iterable[int]) -> BusyReading | None:
        """None the first time, and where the kernel does not say (no PSI, no /proc)."""
        pids = {*program_pids, os.getpid()}  # sdpa-tui's own work is not the machine's
        now, busy, waited = self.clock(), self._busy_ticks(), self._waited_us()
        if busy is None or waited is None:
            return None
        used = {pid: t for pid in pids if (t := self._process_ticks(pid)) is not None}
        last, self._last = self._last, (now, busy, waited, used)
        if last is None or now <= last[0]:
            return None
        then, busy_then, waited_then, used_then = last
        seconds = now - then
        program = sum(t - used_then.get(pid, t) for pid, t in used.items())
        others = max(0, busy - busy_then - program) / self.ticks / seconds
        return BusyReading(100.0 * (waited - waited_then) / 1e6 / seconds, others)

    def _busy_ticks(self) -> int | None:
        """Every CPU's non-idle time, in clock ticks (/proc/stat's first line, less idle and iowait)."""
        try:
            with open(os.path.join(self.proc, "stat"), encoding="ascii") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        return sum(fields[:8]) - fields[3] - fields[4] if len(fields) >= 8 else None

    def _waited_us(self) -> int | None:
        try:
            with open(self.psi, encoding="ascii") as f:
                for line in f:
                    if line.startswith("some "):
                        return int(dict(part.split("=", 1) for part in line.split()[1:])["total"])
        except (OSError, ValueError, KeyError):
            return None
        return None

    def _process_ticks(self, pid: int) -> int | None:
        """A process's user and system time, in clock ticks (its threads' included)."""
        try:
            with open(os.path.join(self.proc, str(pid), "stat"), encoding="ascii") as f:
                after_name = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        return int(after_name[11]) + int(after_name[12])  # utime, stime: the stat's 14th and 15th fields
