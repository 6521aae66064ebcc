"""One panel per backend: flag, status, the three clocks, history, and the kernel that ran."""

from __future__ import annotations

import textwrap

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

from ...core.backends import Backend
from ...core.lab.backend_state import BackendState
from ...core.lab.session import BackendRow, Session
from ...core.protocol.records import KernelInfo
from ...core.status import PROBLEMS, Status
from ...core.traces import kernel_names, kernel_short_names
from ...core.units import duration
from ...exports.lab.report_data import STATUS_TEXT, fmt_error, fmt_num, fmt_tflops

MAX_LISTED = 8
KEYS = {Backend.CUDNN: "c", Backend.FLASH: "f", Backend.EFFICIENT: "e", Backend.MATH: "m"}


def fmt_blocks_per_sm(value: float) -> str:
    """Grid blocks per SM: two decimals below one (how much of the GPU a small grid leaves idle)."""
    return f"{value:.2f}" if value < 1 else f"{value:.1f}"


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "–"
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def fit_lines(text: Text, width: int, wrap_first: int = 2) -> Text:
    """Lines after the first ``wrap_first`` cut to ``width`` with an ellipsis (one fact per line);
    the first ones (the main kernel's name and what it says) wrap, so nothing of them is lost."""
    lines = text.split("\n")
    for line in lines[wrap_first:]:
        line.truncate(width, overflow="ellipsis")
    return Text("\n").join(lines)


def reason_lines(state: BackendState, width: int, height: int) -> Text:
    """Why a backend cannot run: its reason, then torch's other lines, each once, wrapped in
    whole words to ``width``. Past ``height`` lines (0: no limit) the last shown line ends in
    "…" at a word boundary: the exports and ``report`` keep every word."""
    reason = (state.reason or "").strip()
    parts = [(reason, "bold red")] + [
        (line, "dim") for line in dict.fromkeys(d.strip() for d in state.details) if line and line not in reason
    ]
    lines = [(wrapped, style) for part, style in parts for wrapped in textwrap.wrap(part, width) or [""]]
    if height and len(lines) > height:
        lines = lines[:height]
        last, style = lines[-1]
        words = last.split(" ")
        while words and len(" ".join(words)) + 2 > width:
            words.pop()
        lines[-1] = (" ".join(words) + " …", style)
    return Text("\n").join(Text(line, style=style) for line, style in lines)


def dims(value: tuple[int, int, int] | None) -> str:
    return "×".join(str(v) for v in value) if value else "–"


"""Statuses where the panel shows why instead of numbers."""


class BackendPanel(Vertical):
    """Shows one :class:`BackendState`; ``show(session)`` redraws it from the session."""

    def __init__(self, backend: Backend) -> None:
        super().__init__(id=f"panel-{backend.short}", classes="backend-panel")
        self.backend = backend
        self.border_title = f"{backend.label} ({KEYS[backend]})"
        self._shown: tuple | None = None
        self._last_show: tuple | None = None  # show()'s arguments, to draw again at a new size
        self._body: Text | None = None  # what the kernel part shows

    def compose(self) -> ComposeResult:
        # Fixed-size parts: an update redraws this panel only, never the screen's layout.
        yield Static(id="head", classes="panel-head")
        yield Sparkline([], id="history", classes="panel-history")
        yield Static(id="kernel", classes="panel-kernel")

    def show(self, session: Session, row: BackendRow, is_pick: bool, is_cpu: bool, compact: bool = False) -> None:
        """``compact``: a short terminal; clocks on one line so the main kernel stays visible."""
        self._last_show = (session, row, is_pick, is_cpu, compact)
        state = session.backends[self.backend]
        width = max(self.content_region.width, 20)
        body = self.query_one("#kernel", Static)
        key = (state.version, is_pick, is_cpu, row.speedup_vs_math, compact, width, self.content_region.height)
        if key == self._shown:
            return
        self._shown = key
        self.set_class(not state.enabled, "-off")
        self.set_class(state.status in PROBLEMS, "-problem")
        self.set_class(is_pick, "-pick")
        self.border_subtitle = "SDPA's pick" if is_pick else ("flag off" if not state.enabled else "")
        self.set_class(False, "-split-head")  # _clocks sets it again where its lines need it
        clocks = self._clocks_line(state, is_cpu) if compact else self._clocks(state, row, is_cpu, width)
        self.query_one("#head", Static).update(Group(self._status(state), clocks), layout=False)
        spark = self.query_one("#history", Sparkline)
        spark.data = state.sparkline_values(session.workload.describe()) if state.status == Status.OK else []
        spark.display = bool(spark.data) and not compact
        if state.status in PROBLEMS:  # the reason wraps in whole words; a cut says so
            # below the one status line (app.tcss: .-problem .panel-head), the panel is the reason's
            text = reason_lines(state, width, max(self.content_region.height - 1, 0))
        else:
            text = fit_lines(self._kernel(state), width)
        if text != self._body:  # the kernel lines change at a burst, not at every sample: no redraw
            self._body = text
            body.update(text, layout=False)

    def on_resize(self) -> None:
        """Lines are cut and wrapped to the panel's width: at a new size, draw them again."""
        if self._last_show is not None:
            self.show(*self._last_show)

    # -- pieces ----------------------------------------------------------------------------
    def _status(self, state: BackendState) -> Text:
        label = STATUS_TEXT.get(state.status, state.status)
        text = Text()
        text.append("● on " if state.enabled else "○ off ", style="bold green" if state.enabled else "dim")
        style = {Status.OK: "green", Status.WAITING: "yellow"}.get(state.status, "bold red")
        if state.status == Status.DISABLED:
            text.append("flag off: not measured", style="dim")
            return text
        text.append(label, style=style)
        if state.reason and state.status not in PROBLEMS:  # a problem's reason gets the panel's body
            text.append(f": {state.reason}", style=style)
        return text



    def _clocks(self, state: BackendState, row: BackendRow, is_cpu: bool, width: int) -> Group | Text:
        if state.status != Status.OK:
            return Text("")
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", min_width=8)
        table.add_column(justify="right", min_width=10)
        table.add_column(justify="right", style="dim")
        for name, window in (("kernel", state.kernel), ("GPU/call", state.gpu), ("eager", state.eager)):
            if is_cpu and name == "GPU/call":
                continue
            s = window.summary()
            table.add_row(name, duration(s.median if s else None), f"p90 {duration(s.p90)}" if s else "")
        speed = Text.assemble(
            (fmt_tflops(row.tflops), "bold"), f" TFLOP/s ({fmt_num(row.pct_of_peak, 0, '%')} of peak)  ",
            (fmt_num(row.speedup_vs_math, 2), "bold"), "×MATH")
        memory = Text.assemble(("mem ", "bold"), fmt_bytes(state.peak_bytes), ("  err ", "bold"),
                               fmt_error(row.max_rel_error))
        one_line = speed.cell_len + 2 + memory.cell_len <= width
        extras = [Text.assemble(speed, "  ", memory)] if one_line else [speed, memory]
        # two lines rather than the error cut mid-number; where the head's five rows (app.tcss) hold the status,
        # the clocks and one line only (three clocks on a GPU), it takes a sixth: a layout only then
        self.set_class(not one_line and table.row_count == 3, "-split-head")
        for extra in extras:
            extra.truncate(width, overflow="ellipsis")
        lines = [table, *extras]
        if row.grad_max_rel is not None:  # fwd+bwd: a line of its own, or a narrow panel would cut it off
            grads = Text.assemble(("∇err ", "bold"), *(f"{name} {fmt_error(e)}  " for name, e in
                                                         zip(("dq", "dk", "dv"), row.grad_max_rel)))
            grads.truncate(width, overflow="ellipsis")
            lines.append(grads)
        if row.nonfinite:
            lines.append(Text(f"NaN/Inf in {', '.join(row.nonfinite)} ({row.backend.label}, this workload)",
                              style="bold red"))
        return Group(*lines)

    def _clocks_line(self, state: BackendState, is_cpu: bool) -> Text:
        if state.status != Status.OK:
            return Text("")
        text = Text()
        clocks = (("kernel", state.kernel), ("eager", state.eager)) if is_cpu else (("GPU", state.gpu), ("eager", state.eager))
        for name, window in clocks:
            s = window.summary()
            text.append(f"{name} ", style="bold")
            text.append(f"{duration(s.median if s else None)}  ")
        return text

    def _kernel(self, state: BackendState) -> Text:
        main = kernel_names.main_kernel(state.shown_kernels)
        if state.status == Status.OK and state.capture_error:
            failed = Text(f"kernel capture failed: {state.capture_error}", style="bold red")
            if main is None:
                return failed
            failed.append("\n")
            failed.append_text(self._kernel_identity(state, main))
            failed.no_wrap, failed.overflow = True, "ellipsis"
            return failed
        if state.status != Status.OK or main is None:
            return Text("")
        return self._kernel_identity(state, main)

    def _kernel_identity(self, state: BackendState, main: KernelInfo) -> Text:
        ident = kernel_names.identify(main.name)
        text = Text()
        text.append(ident.short, style="bold cyan")
        if ident.family:
            text.append(f"\n{ident.describe()}", style="cyan")
        if main.grid:
            # how full the launch is, in one unit for every kernel (help: "blocks/SM")
            fill = f" ({fmt_blocks_per_sm(main.blocks_per_sm)} blocks/SM)" if main.blocks_per_sm is not None else ""
            text.append(
                f"\ngrid {dims(main.grid)}{fill}  block {dims(main.block)}"
                f"\nsmem {fmt_bytes(main.shared_memory)}  regs {main.registers if main.registers is not None else '–'}"
            )
        shown, untimed = state.shown_kernels, state.kernels_untimed
        text.append(f"\n{len(shown)} GPU activit{'y' if len(shown) == 1 else 'ies'} per call"
                    + (" (from the CUDA graph; times at the first profile):" if untimed else ":")
                    if main.category != "cpu_op" else f"\n{len(shown)} ops per call (self time):", style="dim")
        ranked = shown if untimed else sorted(shown, key=lambda k: k.duration_us, reverse=True)
        for kernel in ranked[:MAX_LISTED]:
            time = "" if untimed else duration(kernel.duration_us)
            text.append(f"\n{time:>10}  {kernel_short_names.short_name(kernel.name)}", style="dim")
        if len(ranked) > MAX_LISTED:
            text.append(f"\n{'':>10}  … {len(ranked) - MAX_LISTED} more", style="dim")
        text.no_wrap, text.overflow = True, "ellipsis"  # one line per fact; the full names are in exports
        return text
