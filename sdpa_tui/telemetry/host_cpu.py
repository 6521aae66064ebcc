"""How contended the host's CPUs are, from the kernel's pressure stall information (PSI).

``/proc/pressure/cpu`` (Linux 4.20+) says which share of the recent past at least one runnable
task waited for a CPU. While the engine times a loop on the CPU (or an eager loop on a GPU
box), such waits land inside its timings: on a 2-core machine shared with other work the live
medians read several times the headless ones (benchmarks/monitor/live_vs_report.py records both).
"""

from __future__ import annotations

PSI_CPU = "/proc/pressure/cpu"
DISTURBED_AT_PERCENT = 10.0
"""From this share of waiting, the header says the host disturbs the numbers."""


def cpu_pressure(path: str = PSI_CPU) -> float | None:
    """Percent of the last 10 s in which some task waited for a CPU; None where the kernel does not say."""
    try:
        with open(path, encoding="ascii") as f:
            for line in f:
                if line.startswith("some "):
                    fields = dict(part.split("=", 1) for part in line.split()[1:])
                    return float(fields["avg10"])
    except (OSError, ValueError, KeyError):
        return None
    return None


def disturbance_note(pressure: float | None, on_cpu: bool = True) -> str:
    """The header's badge for a contended host, or "" when it is quiet or cannot tell: the share
    of the last 10 s in which some task waited for a core. On a GPU only the host-timed (eager)
    clock is affected."""
    if pressure is None or pressure < DISTURBED_AT_PERCENT:
        return ""
    return f"CPU CONTENDED {pressure:.0f}%: {'times' if on_cpu else 'eager times'} read high"
