"""``g``: choose the GPU the engine measures (and the panels show), from the host's GPUs."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ...telemetry.gpu_snapshot import GpuSnapshot
from ...telemetry.host_gpus import HostGpus
from ..widgets.gpu_overview import gpu_line


class GpuChooser(ModalScreen[int | None]):
    """Dismisses with the chosen NVML index, or None (escape)."""

    DEFAULT_CSS = """
    GpuChooser { align: center middle; }
    GpuChooser > Vertical { width: auto; max-width: 100%; height: auto; border: round $accent;
                            background: $surface; padding: 0 1; }
    GpuChooser OptionList { height: auto; max-height: 12; width: auto; }
    """
    BINDINGS = [Binding("escape,q,g", "dismiss_none", "Cancel")]

    def __init__(self, host: HostGpus, current: int | None, measuring: frozenset[int] = frozenset(),
                 hidden: frozenset[int] = frozenset()) -> None:
        """``hidden``: GPUs that ``CUDA_VISIBLE_DEVICES`` hides from the engine: listed, not choosable."""
        super().__init__()
        self.host = host
        self.current = current
        self.measuring = measuring
        self.hidden = hidden

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Measure on which GPU? (enter: switch, the engine restarts there; esc: cancel)")
            yield OptionList(*(self._option(g) for g in self.host.gpus))

    def _option(self, gpu: GpuSnapshot) -> Option:
        line = gpu_line(gpu, gpu.index == self.current, gpu.index in self.measuring)
        if gpu.index in self.hidden:
            line.append("  hidden by CUDA_VISIBLE_DEVICES", style="dim")
        return Option(line, id=str(gpu.index), disabled=gpu.index in self.hidden)

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        index = next((i for i, g in enumerate(self.host.gpus) if g.index == self.current), 0)
        options.highlighted = index
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
