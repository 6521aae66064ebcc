"""``report`` and ``sweep`` in a pipe: their lines fit ``COLUMNS`` (160 without it) and end with no spaces; a run in
which no selected backend gave a number is said in one line (exit code 5). MADE-UP sessions and points."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from sdpa_tui.commands.console_output import PIPED_WIDTH, print_out, stdout_console, without_trailing_spaces
from sdpa_tui.commands.exit_codes import EXIT_ENGINE, EXIT_NOT_COMPARABLE, EXIT_NOTHING_MEASURED, EXIT_USAGE
from sdpa_tui.commands.report import nothing_measured as report_nothing
from sdpa_tui.commands.sweep import nothing_measured as sweep_nothing
from sdpa_tui.core.backends import Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.records import BackendStatus, Environment, Ready, Sample
from sdpa_tui.core.sweep.sweep_points import NOT_ELIGIBLE, OK, OOM, SKIPPED, SweepPoint
from sdpa_tui.core.workload import Workload

C, F, E, M = Backend.CUDNN, Backend.FLASH, Backend.EFFICIENT, Backend.MATH
CPU = Environment(device="cpu", device_name="Test CPU", torch_version="2.13.0+cpu", cpu_threads=2)


@pytest.mark.parametrize("columns, width", [("80", 80), ("123", 123), (None, PIPED_WIDTH)])
def test_piped_output_fits_columns_when_set_and_keeps_160_when_not(columns, width, monkeypatch):
    """It was Console(width=160) whenever stdout was no terminal, COLUMNS or not."""
    monkeypatch.setattr("sys.stdout", io.StringIO())  # a pipe
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    console = stdout_console()
    assert not console.is_terminal and console.width == width


def test_piped_print_leaves_out_the_spaces_rich_pads_a_table_with(monkeypatch):
    out = io.StringIO()
    console = Console(file=out, width=80)
    table = Table(title="a title shorter than the table", title_justify="left")
    for name in ("backend", "status", "a long heading", "µs"):
        table.add_column(name)
    table.add_row("Flash", "ok", "", "1.0")
    print_out(console, table)
    lines = out.getvalue().splitlines()
    assert len(lines) > 4 and all(line == line.rstrip() for line in lines), lines
    assert "│ Flash   │ ok     │" in out.getvalue()  # the spaces inside a line stay


def test_trailing_spaces_before_the_codes_that_end_a_style_go_too():
    assert without_trailing_spaces("a  \x1b[0m\nb \nc") == "a\x1b[0m\nb\nc"
    assert without_trailing_spaces(" x  y ") == " x  y"


def test_nothing_measured_is_its_own_exit_code():
    assert EXIT_NOTHING_MEASURED not in (0, EXIT_ENGINE, EXIT_USAGE, EXIT_NOT_COMPARABLE, 4, 130)


def cpu_session(enabled: tuple[Backend, ...], ran: tuple[Backend, ...]) -> Session:
    session = Session(Workload(batch=1, heads=2, kv_heads=2, seq=64, head_dim=16), enabled)
    cid = session.next_config_id()
    session.apply(Ready(CPU))
    for b in enabled:
        if b in ran:
            session.apply(BackendStatus(cid, b, "ok"))
            for i in range(5):
                session.apply(Sample(cid, b, None, 30.0, "none", 1, 1.0 + i))
        else:
            session.apply(BackendStatus(cid, b, "not_eligible", f"{b.label} has no CPU implementation"))
    return session


def test_a_report_with_no_number_says_so_in_one_line():
    line = report_nothing(cpu_session((C,), ()))
    assert line == "nothing measured: no selected backend ran this workload on cpu (cuDNN not eligible)"
    line = report_nothing(cpu_session((C, E), ()))
    assert "\n" not in line and "cuDNN not eligible, Mem-efficient not eligible" in line


def test_a_report_with_one_number_is_a_result():
    assert report_nothing(cpu_session((C, F, E, M), (F, M))) == ""
    assert report_nothing(cpu_session((C, M), (M,))) == ""


def test_a_sweep_in_which_no_backend_ran_says_so_and_one_that_ran_does_not():
    nothing = [SweepPoint(64, C, NOT_ELIGIBLE, "no CPU implementation"), SweepPoint(64, M, OOM, "needed 9 GiB"),
               SweepPoint(128, C, SKIPPED, "not measured"), SweepPoint(128, M, SKIPPED, "OOM at 64")]
    assert sweep_nothing(nothing, "cuda:0") == (
        "nothing measured: no selected backend ran at any length on cuda:0 (cuDNN not eligible, Math out of memory)")
    assert sweep_nothing([*nothing, SweepPoint(32, M, OK, eager_us=5.0)], "cuda:0") == ""
