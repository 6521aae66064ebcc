"""Edit the workload in a form that validates as you type; Escape keeps the previous one.

The fields sit two to a row in a scrollable body, so the form fits an 80x24 terminal with its buttons on screen.
The kv length follows the query length while the two are equal (or the kv field is left empty), as ``--kv-seq``
defaults to ``--seq`` and ``+``/``-`` keep them together; a kv length set apart from the query length stays put.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
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
LAYOUT = ("batch", "head_dim", "heads", "kv_heads", "seq", "kv_seq", "dtype", "mask", "direction")
"""The fields in reading (and Tab) order, two to a row: each row pairs what goes together."""

SAME_AS_SEQ = "= query length"
"""The kv field's placeholder: left empty, the kv length is the query length."""


class WorkloadForm(ModalScreen[Workload | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("enter", "apply", "Apply", show=False)]

    def __init__(self, workload: Workload) -> None:
        super().__init__()
        self.workload = workload
        self.candidate: Workload | None = workload
        self.kv_follows = workload.kv_seq == workload.seq
        """The kv length follows the query length: they were equal, or the kv field is empty."""

    def compose(self) -> ComposeResult:
        labels = dict(INT_FIELDS)
        choices = dict(CHOICE_FIELDS)
        with VerticalScroll(id="workload-form", can_focus=False) as form:  # Tab goes from field to field
            form.border_title = "Workload"
            form.border_subtitle = "Enter applies · Esc cancels"
            with Grid(id="form-grid"):
                for name in LAYOUT:
                    with Horizontal(classes="form-field"):
                        yield Label(labels.get(name, name), classes="form-label")
                        if name in choices:
                            yield Select([(o, o) for o in choices[name]], value=getattr(self.workload, name),
                                         id=name, allow_blank=False, compact=True)
                        else:
                            yield Input(str(getattr(self.workload, name)), id=name, type="integer", compact=True,
                                        placeholder=SAME_AS_SEQ if name == "kv_seq" else "")
            with Vertical(id="form-footer"):  # docked: the fields scroll, the verdict and the buttons stay
                yield Static("", id="form-error")
                with Horizontal(id="form-buttons"):
                    yield Button("Apply", variant="primary", id="apply", compact=True)
                    yield Button("Cancel", id="cancel", compact=True)

    def on_mount(self) -> None:
        self.query_one("#kv_seq", Input).tooltip = ("follows the query length while equal to it or left empty; "
                                                    "set apart, it stays")
        self.validate_form()

    def on_input_changed(self, event: Input.Changed) -> None:
        seq = self.query_one("#seq", Input)
        kv = self.query_one("#kv_seq", Input)
        if event.input is seq:
            if self.kv_follows and kv.value != seq.value:
                kv.value = seq.value
        elif event.input is kv:
            # read the fields as they are now (a Changed of our own may arrive after the query length moved on)
            self.kv_follows = kv.value.strip() in ("", seq.value.strip())
        self.validate_form()

    def on_select_changed(self) -> None:
        self.validate_form()

    def validate_form(self) -> Workload | None:
        error = self.query_one("#form-error", Static)
        try:
            values: dict = {}
            for name, label in INT_FIELDS:
                text = self.query_one(f"#{name}", Input).value.strip()
                if name == "kv_seq" and not text:
                    text = self.query_one("#seq", Input).value.strip()  # empty: the same as the query length
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
