"""The GPU panel: NVML telemetry; every field that cannot be read says n/a and why."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from ...telemetry.gpu_snapshot import GpuSnapshot


class GpuPanel(Static):
    def on_mount(self) -> None:
        self.border_title = "GPU (NVML)"

    _shown: tuple | None = None

    def show(self, gpu: GpuSnapshot | None, cpu_mode: bool, engine_share: float | None = None) -> None:
        """``engine_share``: the share of recent wall time the engine's timed calls kept the
        device busy (``Session.engine_busy``), beside NVML's reading of how busy it was."""
        engine = "n/a" if engine_share is None else f"{100 * engine_share:.0f}"
        key = (gpu.time if gpu else None, cpu_mode, engine)
        if key == self._shown:
            return
        self._shown = key
        if gpu is None:
            self.update(layout=False, content=Text("reading NVML…", style="dim"))
            return
        if not gpu.available:
            note = "\nmeasuring on the CPU" if cpu_mode else ""
            self.update(layout=False, content=Text(f"n/a: {gpu.reason}{note}", style="yellow"))
            return
        self.border_title = f"GPU {gpu.index} · {gpu.fmt('name')}"
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="bold")
        grid.add_column()
        used, total = gpu.memory_used_bytes, gpu.memory_total_bytes
        memory = f"{used / 2**30:.1f} / {total / 2**30:.0f} GiB" if used is not None and total else self._na(gpu, "memory_used_bytes")
        def val(field: str, spec: str = "") -> str:
            return gpu.fmt(field, spec, na=self._na(gpu, field))

        reasons = ", ".join(gpu.clock_event_reasons) if gpu.clock_event_reasons else self._na(gpu, "clock_event_reasons")
        others = gpu.other_processes
        if others:
            names = ", ".join(f"{p.pid} {p.name}".strip() for p in others[:3])
            other_text = Text(f"{len(others)} other process(es): {names}: numbers disturbed", style="bold red")
        else:
            other_text = Text(self._na(gpu, "processes") if gpu.processes is None else "none")
        # Most important first: a short terminal cuts the last lines.
        grid.add_row("util", f"{val('utilization_gpu_pct')} % NVML · engine {engine} % · mem {memory}")
        grid.add_row("others", other_text)
        grid.add_row("throttle", Text(reasons, style="bold red" if gpu.throttled else ""))
        grid.add_row("clocks", f"SM {val('sm_clock_mhz')}/{val('sm_clock_max_mhz')} MHz · mem {val('mem_clock_mhz')} MHz")
        grid.add_row("power", f"{val('power_w', '.0f')} / {val('power_limit_w', '.0f')} W · {val('temperature_c')} °C")
        self.update(grid, layout=False)

    @staticmethod
    def _na(gpu: GpuSnapshot, field: str) -> str:
        why = gpu.why(field)
        return f"n/a ({why})" if why else "n/a"
