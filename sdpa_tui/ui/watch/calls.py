"""The Calls view of ``sdpa-tui watch``: one row per SDPA call signature of the watched program,
the selected call in full, and the program's output.

The screen only draws: the app polls the program and hands each new report to :meth:`show`.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.events import Resize
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Log, Static

from ...core.calls.advice import SignatureAdvice
from ...core.calls.call_signature import CallSignature
from ...core.calls.watch_report import CONTENDED_MARK, CallRow, WatchReport
from ...core.calls.watched_calls import UninspectedCalls
from ..screens.help import HelpScreen
from .call_rows import (
    CHECK_FAILED,
    COLUMNS,
    MODULE_WIDTH,
    RIGHT_ALIGNED,
    alternatives_lines,
    detail_lines,
    elide_middle,
    module_width,
    program_state,
    shown_columns,
    table_cells,
    traceback_tail,
    uninspected_cells,
    uninspected_detail,
)

LOG_LINES = 2000


class CallsScreen(Screen):
    DEFAULT_CSS = """
    CallsScreen { layout: vertical; }
    #watch-banner { height: auto; max-height: 8; padding: 0 1; background: $panel; }
    #watch-banner.-failed { background: $error 30%; }
    #advice-progress { height: auto; max-height: 3; padding: 0 1; background: $accent 30%; display: none; }
    #advice-progress.-shown { display: block; }
    #calls-table { height: 2fr; min-height: 5; }
    #calls-lower { height: 3fr; min-height: 8; }
    #call-detail-box { width: 3fr; border: round $primary; border-title-style: bold; }
    #call-detail { padding: 0 1; }
    #program-log { width: 2fr; border: round $secondary; border-title-style: bold; }
    """
    BINDINGS = [
        Binding("t", "try_in_lab", "Try in lab", tooltip="measure the selected call's shape with every backend in the four-panel lab"),
        Binding("a", "show_lab", "Lab", tooltip="show the four-panel lab without changing its workload"),
        Binding("r", "next_rank", "Rank", tooltip="a distributed job: show one rank's calls, then the next; all again"),
        Binding("b", "advise", "Best", tooltip="once the program has exited: measure every call's alternatives in the "
                "lab's engine and show the best, its saving and the code"),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    module_width: reactive[int] = reactive(MODULE_WIDTH[1], init=False)
    """The module column's widest cell: what the terminal leaves after the leading columns (``call_rows.LEADING``);
    longer module paths are elided in the middle (the selected-call panel has them whole)."""

    advice_progress: reactive[str] = reactive("", init=False)
    """Where the alternatives' measuring (``b``) stands, one line above the table while it runs ("" otherwise)."""

    def __init__(self, program: str, log_path: str) -> None:
        super().__init__(id="calls")
        self.program = program
        self.log_path = log_path
        self.rows: dict[str, CallRow] = {}
        self.uninspected: dict[str, UninspectedCalls] = {}  # rows of calls counted, not inspected, after the others
        self.report: WatchReport | None = None
        self._keys: dict[tuple[CallSignature, bool], str] = {}
        self._order: list[str] = []
        self._columns = COLUMNS  # those shown: call_rows.shown_columns
        self._cells: dict[str, dict[str, str]] = {}
        self._banner = ""
        self.rank: int | None = None  # show one rank's part of a distributed job (None: every rank merged)
        self.advice: dict[str, SignatureAdvice] = {}  # by row key, once ``b`` measured it
        self.advice_note = ""  # what the measuring of the advice said of the whole run (its budget, what it left out)
        self._exit: tuple[int | None, bool] = (None, False)

    def compose(self) -> ComposeResult:
        yield Static(f"starting · watching {self.program}", id="watch-banner")
        yield Static("", id="advice-progress")
        table = DataTable(id="calls-table", cursor_type="row", zebra_stripes=True)
        self._add_columns(table)
        yield table
        with Horizontal(id="calls-lower"):
            with VerticalScroll(id="call-detail-box") as box:
                box.border_title = "selected call"
                yield Static("no SDPA call seen yet", id="call-detail")
            log = Log(id="program-log", max_lines=LOG_LINES)
            log.border_title = "program output"
            yield log
        yield Footer(compact=True)

    # -- drawing ---------------------------------------------------------------------------
    def show(self, report: WatchReport, exit_code: int | None, stopped: bool = False) -> None:
        """Draw the latest report; the selected row stays selected as rows are added or reordered."""
        self.report, self._exit = report, (exit_code, stopped)
        self._show_banner(report, exit_code, stopped)
        table = self.query_one(DataTable)
        shown = report.rows if self.rank is None else [r.for_rank(self.rank) for r in report.rows
                                                       if self.rank in r.per_rank]
        keys = [self._key(row) for row in shown]
        self.rows = dict(zip(keys, shown))
        cells = {key: table_cells(row, report.kernels_note, self.advice.get(key)) for key, row in self.rows.items()}
        self.uninspected = {} if self.rank is not None else {f"uninspected-{c.path}": c for c in report.uninspected}
        cells |= {key: uninspected_cells(calls) for key, calls in self.uninspected.items()}
        keys += list(self.uninspected)
        before, self._cells = self._cells, cells
        width = module_width(cells.values(), table.size.width)
        columns = shown_columns(cells.values())
        if keys != self._order or width != self.module_width or columns != self._columns:
            selected = self.selected_key()
            self._order, self._columns = keys, columns
            self.set_reactive(CallsScreen.module_width, width)  # drawn here, once
            self._fill(table, selected)
        else:
            for key, values in cells.items():
                for column, _ in columns:
                    value = values[column]
                    if before[key][column] != value:
                        table.update_cell(key, column, self._cell(column, value), update_width=True)
        self._show_detail()

    def _add_columns(self, table: DataTable) -> None:
        for key, heading in self._columns:
            table.add_column(Text(heading, justify="right") if key in RIGHT_ALIGNED else heading, key=key)

    def _fill(self, table: DataTable, selected: str | None) -> None:
        """The rows anew (the columns too, so that each is as wide as its cells now); ``selected`` stays selected."""
        table.clear(columns=True)
        self._add_columns(table)
        for key in self._order:
            table.add_row(*(self._cell(column, self._cells[key][column]) for column, _ in self._columns), key=key)
        if selected in self._order:
            table.move_cursor(row=self._order.index(selected), animate=False)

    def watch_advice_progress(self, text: str) -> None:
        line = self.query_one("#advice-progress", Static)
        line.set_class(bool(text), "-shown")
        line.update(Text(text))

    def watch_module_width(self) -> None:
        if self._order:
            self._fill(self.query_one(DataTable), self.selected_key())

    def on_resize(self, _: Resize) -> None:
        self.call_after_refresh(self._fit_module_column)  # once the table has its new size

    def _fit_module_column(self) -> None:
        self.module_width = module_width(self._cells.values(), self.query_one(DataTable).size.width)

    def _show_banner(self, report: WatchReport, exit_code: int | None, stopped: bool) -> None:
        # how the program stands first: a long command line wraps after it, never through it
        text = f"{program_state(report, exit_code, stopped)} · watching {self.program}\noutput: {self.log_path}"
        if self.rank is not None:
            text += f" · rank {self.rank} alone (r: next rank)"
        failed = exit_code not in (None, 0) and not stopped
        if report.error:
            text += "\n" + traceback_tail(report.error)
        elif failed:
            text += " (its last lines are in the output pane)"
        if text != self._banner:
            self._banner = text
            banner = self.query_one("#watch-banner", Static)
            banner.set_class(failed or bool(report.error), "-failed")
            banner.update(Text(text))

    def _cell(self, column: str, value: str) -> Text | str:
        if column == "module":
            return elide_middle(value, self.module_width)
        if value.startswith(CHECK_FAILED):  # its output check failed: the evidence is in the detail pane
            return Text(value, style="bold red")
        if column == "time" and value.endswith(CONTENDED_MARK):  # measured on a busy host: the panel says how busy
            return Text(value, style="yellow", justify="right")
        return Text(value, justify="right") if column in RIGHT_ALIGNED else value

    def _key(self, row: CallRow) -> str:
        """A row's table key: its signature, eager and compiled apart (as the report merges them)."""
        ident = (row.signature, row.compiled)
        if ident not in self._keys:
            self._keys[ident] = f"call-{len(self._keys)}"
        return self._keys[ident]

    @property
    def row_keys(self) -> tuple[str, ...]:
        """The table's rows, top to bottom: each row's key (``rows`` and ``uninspected`` hold what it shows)."""
        return tuple(self._order)

    def selected_key(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        return self._order[table.cursor_row] if table.cursor_row < len(self._order) else None

    def selected_row(self) -> CallRow | None:
        key = self.selected_key()
        return self.rows.get(key) if key else None

    def _show_detail(self) -> None:
        row = self.selected_row()
        detail = self.query_one("#call-detail", Static)
        unseen = self.uninspected.get(self.selected_key() or "")
        if unseen is not None:
            detail.update(Text("\n".join(uninspected_detail(unseen))))
            return
        if row is None or self.report is None:
            detail.update("no SDPA call seen yet" if self.report is None or not self.report.rows else "")
            return
        lines = detail_lines(row, self.report) + alternatives_lines(self.advice.get(self.selected_key() or ""), row.count)
        if self.advice_note:  # the whole run's, said under every call (the notice that said it was short)
            lines += ["", f"advice  {self.advice_note}"]
        detail.update(Text("\n".join(lines)))

    def on_data_table_row_highlighted(self, _: DataTable.RowHighlighted) -> None:
        self._show_detail()

    def write_log(self, text: str) -> None:
        if text:
            self.query_one("#program-log", Log).write(text)

    # -- keys ------------------------------------------------------------------------------
    def action_try_in_lab(self) -> None:
        row = self.selected_row()
        if row is None:
            unseen = self.selected_key() in self.uninspected
            self.notify("these calls ran SDPA inside C++: their shapes are unseen, the lab cannot try them" if unseen
                        else "no call selected: the program has made no SDPA call yet", severity="warning")
            return
        self.app.try_in_lab(row)

    def action_next_rank(self) -> None:
        ranks = sorted({r for row in (self.report.rows if self.report else ()) for r in row.ranks})
        if not ranks:
            self.notify("not a distributed job: no call came from a process with a rank", severity="warning")
            return
        later = [r for r in ranks if self.rank is None or r > self.rank]
        self.rank = later[0] if later else None
        self.show(self.report, *self._exit)

    def action_advise(self) -> None:
        self.app.advise_calls()

    def set_advice(self, report: WatchReport) -> None:
        """The advice measured for ``report``'s rows (same order), kept across the redraws that follow."""
        self.advice = {self._key(row): a for row, a in zip(report.rows, report.advice) if a is not None}
        self.advice_note = report.advice_note
        if self.report is not None:
            self.show(self.report, *self._exit)

    def action_show_lab(self) -> None:
        self.app.show_lab()

    def action_help(self) -> None:
        keys = [*self.BINDINGS, *(b for b in self.app.BINDINGS if b.action in ("quit",))]
        self.app.push_screen(HelpScreen(keys))
