"""GPU telemetry through NVML: plain threads and frozen records, no UI code."""

from .gpu_poller import GpuPoller
from .gpu_snapshot import NA, NVML_FIELDS, GpuProcess, GpuSnapshot, decode_clock_event_reasons, fmt_value, is_throttling
from .nvml import NOT_INSTALLED, NvmlReader

__all__ = [
    "NA",
    "NOT_INSTALLED",
    "NVML_FIELDS",
    "GpuPoller",
    "GpuProcess",
    "GpuSnapshot",
    "NvmlReader",
    "decode_clock_event_reasons",
    "fmt_value",
    "is_throttling",
]
