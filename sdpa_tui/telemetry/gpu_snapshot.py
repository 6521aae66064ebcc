"""The GPU snapshot record and the clock-event-reason decoding (plain Python, no NVML).

A field NVML could not read is ``None`` and ``errors[field]`` says why, in NVML's words.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

NA = "n/a"

# Bits of nvmlClocksEventReason* (and the deprecated nvmlClocksThrottleReason*), as in
# nvidia-ml-py 13.x; the labels follow nvidia-smi's wording.
CLOCK_EVENT_REASONS: tuple[tuple[int, str], ...] = (
    (0x0001, "idle"),  # nvmlClocksEventReasonGpuIdle
    (0x0002, "applications clocks setting"),  # ...ApplicationsClocksSetting
    (0x0004, "SW power cap"),  # ...SwPowerCap
    (0x0008, "HW slowdown"),  # ...HwSlowdown
    (0x0010, "sync boost"),  # ...SyncBoost
    (0x0020, "SW thermal slowdown"),  # ...SwThermalSlowdown
    (0x0040, "HW thermal slowdown"),  # ...HwThermalSlowdown
    (0x0080, "HW power brake slowdown"),  # ...HwPowerBrakeSlowdown
    (0x0100, "display clock setting"),  # ...DisplayClockSetting
    (0x0200, "board limit"),  # nvmlClocksThrottleReasonBoardLimit
    (0x0400, "reliability"),  # nvmlClocksThrottleReasonReliability
)
NO_REASON = "none"
#: Reasons that do not slow a running kernel down.
NOT_THROTTLING: frozenset[str] = frozenset({NO_REASON, "idle", "applications clocks setting"})


def decode_clock_event_reasons(mask: int) -> tuple[str, ...]:
    """Readable reasons for a clock-event bitmask; ``("none",)`` for 0."""
    mask = int(mask)
    if mask == 0:
        return (NO_REASON,)
    out = [label for bit, label in CLOCK_EVENT_REASONS if mask & bit]
    unknown = mask & ~sum(bit for bit, _ in CLOCK_EVENT_REASONS)
    if unknown:
        out.append(f"unknown (0x{unknown:x})")
    return tuple(out)


def is_throttling(reasons: tuple[str, ...] | None) -> bool:
    """True when a reason other than idle / applications clocks / none is active."""
    return any(r not in NOT_THROTTLING for r in reasons or ())


def fmt_value(value: Any, spec: str = "", na: str = NA) -> str:
    """``format(value, spec)``, or ``na`` for ``None``."""
    return na if value is None else format(value, spec)


class GpuProcess(NamedTuple):
    """A compute process on the GPU; ``used_bytes`` is None where NVML cannot tell."""

    pid: int
    used_bytes: int | None
    name: str = ""


#: The fields that come from NVML (each is None when it could not be read).
NVML_FIELDS: tuple[str, ...] = (
    "name",
    "driver_version",
    "uuid",
    "utilization_gpu_pct",
    "utilization_mem_pct",
    "memory_used_bytes",
    "memory_total_bytes",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "sm_clock_max_mhz",
    "power_w",
    "power_limit_w",
    "temperature_c",
    "clock_event_reasons",
    "processes",
)


@dataclass(frozen=True)
class GpuSnapshot:
    """One GPU read in one pass. ``reason`` is set when the GPU (or NVML) is not there at all."""

    index: int = 0
    name: str | None = None
    driver_version: str | None = None
    uuid: str | None = None
    utilization_gpu_pct: int | None = None  # share of NVML's last sample window with a kernel running (any process), not SM busy
    utilization_mem_pct: int | None = None
    memory_used_bytes: int | None = None
    memory_total_bytes: int | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    sm_clock_max_mhz: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temperature_c: int | None = None
    clock_event_reasons: tuple[str, ...] | None = None
    processes: tuple[GpuProcess, ...] | None = None
    own_pids: frozenset[int] = frozenset()
    time: float = field(default_factory=time.time)
    errors: dict[str, str] = field(default_factory=dict)
    reason: str | None = None
    throttled: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "throttled", is_throttling(self.clock_event_reasons))

    @classmethod
    def unavailable(
        cls, reason: str, index: int = 0, own_pids: frozenset[int] = frozenset()
    ) -> GpuSnapshot:
        """A snapshot with every field n/a for ``reason`` ("no GPU", "NVML library not found", ...)."""
        return cls(
            index=index,
            own_pids=frozenset(own_pids),
            errors={name: reason for name in NVML_FIELDS},
            reason=reason,
        )

    @property
    def available(self) -> bool:
        """False when the whole GPU is n/a (see ``reason``)."""
        return self.reason is None

    @property
    def other_processes(self) -> tuple[GpuProcess, ...]:
        """Compute processes that are not ours (they disturb the measurements)."""
        return tuple(p for p in self.processes or () if p.pid not in self.own_pids)

    @property
    def memory_used_pct(self) -> float | None:
        if self.memory_used_bytes is None or not self.memory_total_bytes:
            return None
        return 100.0 * self.memory_used_bytes / self.memory_total_bytes

    def fmt(self, name: str, spec: str = "", na: str = NA) -> str:
        """Field ``name`` formatted with ``spec``; ``na`` when it could not be read."""
        value = getattr(self, name)
        if isinstance(value, tuple) and name == "clock_event_reasons":
            return ", ".join(value)
        return fmt_value(value, spec, na)

    def why(self, name: str) -> str:
        """The reason field ``name`` is n/a ('' when it was read)."""
        return self.errors.get(name, "")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (tuples become lists)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "processes" and value is not None:
                value = [p._asdict() for p in value]
            elif isinstance(value, (tuple, frozenset)):
                value = sorted(value) if isinstance(value, frozenset) else list(value)
            elif isinstance(value, dict):
                value = dict(value)
            out[f.name] = value
        return out
