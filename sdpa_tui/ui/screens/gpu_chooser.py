"""``g``: choose the GPU the engine measures (and the panels show), from the host's GPUs."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

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

    def __init__(self, host: HostGpus, current: int | None, measuring: frozenset[int] = frozenset()) -> None:
        super().__init__()
        self.host = host
        self.current = current
        self.measuring = measuring

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Measure on which GPU? (enter: switch, the engine restarts there; esc: cancel)")
            yield OptionList(*(Option(gpu_line(g, g.index == self.current, g.index in self.measuring), id=str(g.index))
                               for g in self.host.gpus))

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        index = next((i for i, g in enumerate(self.host.gpus) if g.index == self.current), 0)
        options.highlighted = index
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
