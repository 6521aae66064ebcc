"""Edit the workload in a form that validates as you type; Escape keeps the previous one."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from ...core.workload import DIRECTIONS, DTYPES, MASKS, Workload, WorkloadError

INT_FIELDS = (
    ("batch", "batch"),
    ("heads", "query heads"),
    ("kv_heads", "kv heads"),
    ("seq", "query length"),
    ("kv_seq", "kv length"),
    ("head_dim", "head dim"),
)
CHOICE_FIELDS = (("dtype", tuple(DTYPES)), ("mask", MASKS), ("direction", DIRECTIONS))


class WorkloadForm(ModalScreen[Workload | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("enter", "apply", "Apply", show=False)]

    def __init__(self, workload: Workload) -> None:
        super().__init__()
        self.workload = workload
        self.candidate: Workload | None = workload

    def compose(self) -> ComposeResult:
        with Vertical(id="workload-form"):
            yield Static("Edit the workload (Enter applies, Escape cancels)", id="form-title")
            with Grid(id="form-grid"):
                for name, label in INT_FIELDS:
                    yield Label(label)
                    yield Input(str(getattr(self.workload, name)), id=name, type="integer", compact=True)
                for name, options in CHOICE_FIELDS:
                    yield Label(name)
                    yield Select([(o, o) for o in options], value=getattr(self.workload, name), id=name, allow_blank=False, compact=True)
            yield Static("", id="form-error")
            with Horizontal(id="form-buttons"):
                yield Button("Apply", variant="primary", id="apply")
                yield Button("Cancel", id="cancel")

    def on_input_changed(self) -> None:
        self.validate_form()

    def on_select_changed(self) -> None:
        self.validate_form()

    def validate_form(self) -> Workload | None:
        error = self.query_one("#form-error", Static)
        try:
            values: dict = {}
            for name, label in INT_FIELDS:
                text = self.query_one(f"#{name}", Input).value.strip()
                if not text.lstrip("-").isdigit():
                    raise WorkloadError(f"{label} must be a whole number")
                values[name] = int(text)
            for name, _ in CHOICE_FIELDS:
                values[name] = self.query_one(f"#{name}", Select).value
            self.candidate = Workload(**values)
        except WorkloadError as exc:
            self.candidate = None
            error.update(f"✗ {exc}")
            error.set_class(True, "-error")
        else:
            error.update(f"✓ {self.candidate.describe()}")
            error.set_class(False, "-error")
        self.query_one("#apply", Button).disabled = self.candidate is None
        return self.candidate

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "apply":
            self.action_apply()
        else:
            self.action_cancel()

    def on_input_submitted(self) -> None:
        self.action_apply()

    def action_apply(self) -> None:
        if self.validate_form() is not None:
            self.dismiss(self.candidate)

    def action_cancel(self) -> None:
        self.dismiss(None)
