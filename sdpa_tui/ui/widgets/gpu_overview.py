"""Every GPU of the host, one line each: compact enough for 8 GPUs at 120x40."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from ...core.lab.across_gpus import GpuResult, clock_for, find_outliers, ratios_to_fastest
from ...core.units import duration
from ...telemetry.gpu_snapshot import NOT_THROTTLING, GpuSnapshot
from ...telemetry.host_gpus import HostGpus

SHORT_REASON = {
    "SW power cap": "power cap", "HW slowdown": "HW slowdown", "SW thermal slowdown": "thermal",
    "HW thermal slowdown": "HW thermal", "HW power brake slowdown": "power brake", "sync boost": "sync boost",
    "board limit": "board limit", "reliability": "reliability", "display clock setting": "display clock",
}


def _short_name(name: str | None) -> str:
    if not name:
        return "?"
    return name.removeprefix("NVIDIA ").split(" ")[0][:8]


def _num(value: float | int | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def gpu_line(gpu: GpuSnapshot, watched: bool = False, measuring: bool = False) -> Text:
    """``▶0 H100  97%  3.4/80G SM 1980/1980 312/700W 41°C  ok`` (▶: shown in the panels; *: an
    engine of ours measures there); the state is red when throttled or shared."""
    mark = ("▶" if watched else " ") + ("*" if measuring else " ")
    if not gpu.available:
        return Text(f"{mark}{gpu.index} n/a: {gpu.reason}", style="yellow")
    used, total = gpu.memory_used_bytes, gpu.memory_total_bytes
    memory = f"{used / 2**30:.1f}/{total / 2**30:.0f}G" if used is not None and total else "n/a"
    line = Text(
        f"{mark}{gpu.index} {_short_name(gpu.name):<6} {_num(gpu.utilization_gpu_pct, '>3')}% {memory:>10} "
        f"SM {_num(gpu.sm_clock_mhz, '>4')}/{_num(gpu.sm_clock_max_mhz, '<4')} "
        f"{_num(gpu.power_w, '>3.0f')}/{_num(gpu.power_limit_w, '.0f')}W {_num(gpu.temperature_c, '>2')}°C ",
        style="bold" if watched else "",
    )
    return line.append_text(gpu_state(gpu))


def gpu_state(gpu: GpuSnapshot) -> Text:
    """``ok``, or what disturbs the numbers: throttle reasons, other processes (in red)."""
    problems = [SHORT_REASON.get(r, r) for r in gpu.clock_event_reasons or () if r not in NOT_THROTTLING]
    others = gpu.other_processes
    if others:
        problems.append(f"+{len(others)} proc")
    if problems:
        return Text(", ".join(problems), style="bold red")
    if gpu.clock_event_reasons is None and gpu.why("clock_event_reasons"):
        return Text("throttle n/a", style="dim")
    return Text("ok", style="green")


def nvml_cell(gpu: GpuSnapshot | None) -> Text:
    """The NVML part of a side-by-side row: ``97% SM 1980 312W 41°C ok``."""
    if gpu is None:
        return Text("n/a", style="dim")
    if not gpu.available:
        return Text(f"n/a: {gpu.reason}", style="yellow")
    text = Text(f"{_num(gpu.utilization_gpu_pct, '>3')}% SM {_num(gpu.sm_clock_mhz, '>4')} "
                f"{_num(gpu.power_w, '>3.0f')}W {_num(gpu.temperature_c, '>2')}°C ")
    return text.append_text(gpu_state(gpu))


def devices_table(results: tuple[GpuResult, ...], host: HostGpus | None, watched: int | None) -> Table:
    """``--devices``: the same workload on each GPU, one line each, slow ones in red."""
    clock = clock_for(results)
    ratios = ratios_to_fastest(results, clock)
    slow = {o.gpu for o in find_outliers(results)}
    table = Table(box=None, padding=(0, 1), expand=True, show_edge=False)
    for name, justify, ratio in (("GPU", "left", None), ("picks", "left", None), ("main kernel", "left", 1),
                                 ("kernel", "right", None), ("GPU/call", "right", None), ("eager", "right", None),
                                 (f"×fast({clock})", "right", None), ("NVML", "left", None)):
        table.add_column(name, justify=justify, ratio=ratio, no_wrap=True, overflow="ellipsis",
                         header_style="bold")
    for r in results:
        style = "bold red" if r.gpu in slow else ("bold" if r.gpu == watched else "")
        ratio = ratios.get(r.gpu)
        table.add_row(
            ("▶" if r.gpu == watched else " ") + str(r.gpu), r.backend or "–", r.kernel or r.note or "–",
            duration(r.kernel_us), duration(r.gpu_us), duration(r.eager_us), "–" if ratio is None else f"{ratio:.2f}",
            nvml_cell(host.get(r.gpu) if host else None), style=style,
        )
    return table


class GpuOverview(Static):
    """``show(host, watched, measuring)``: one line per GPU; hidden when NVML sees none.
    With ``results`` (``--devices``) each line also says what that GPU measured."""

    _shown: tuple | None = None

    def on_mount(self) -> None:
        self.border_title = "GPUs of this host (NVML)"

    def show(self, host: HostGpus | None, watched: int | None, measuring: frozenset[int] = frozenset(),
             results: tuple[GpuResult, ...] | None = None) -> None:
        key = (host.time if host else None, watched, measuring, results)
        if key == self._shown:
            return
        self._shown = key
        if results is not None:
            self.display = True
            self.styles.height = len(results) + 3  # a line per GPU, the header, the border
            self.border_title = "the same workload on each GPU"
            outliers = find_outliers(results)
            self.border_subtitle = "g: show another GPU · " + (
                f"slow: GPU {', '.join(str(o.gpu) for o in outliers)}" if outliers else "no outlier")
            self.update(devices_table(results, host, watched), layout=False)
            return
        count = host.count if host else 0
        self.display = count > 0
        if not count:
            return
        self.styles.height = count + 2  # one line per GPU, plus the border
        flagged = len(host.throttled) + len(host.shared)
        self.border_subtitle = f"g: choose · {count} GPU(s)" + (f" · {flagged} flagged" if flagged else "")
        text = Text("\n").join(gpu_line(g, g.index == watched, g.index in measuring) for g in host.gpus)
        self.update(text, layout=False)
