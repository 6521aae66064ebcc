"""``report`` and ``sweep`` as a user pipes them (``COLUMNS=80 sdpa-tui report | cat``): every line fits COLUMNS and
none ends in spaces (they were 160 wide, each table row padded); and a run in which no selected backend can run the
workload on this device exits 5 with one line saying so, where it exited 0 with an empty table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO

pytestmark = pytest.mark.torch_range

SMALL = ("--device", "cpu", "--batch", "1", "--heads", "2", "--head-dim", "16", "--duration", "0.5")


def run(*args: str, columns: str | None = "80") -> subprocess.CompletedProcess:
    """``sdpa-tui ARGS`` with stdout and stderr pipes (no terminal), COLUMNS set or not."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(REPO)
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run([sys.executable, "-m", "sdpa_tui", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=180)


def assert_fits(text: str, width: int) -> None:
    lines = text.splitlines()
    assert lines, "no output"
    too_long = [line for line in lines if len(line) > width]
    assert not too_long, f"{len(too_long)} line(s) longer than {width}: {too_long}"
    padded = [line for line in lines if line != line.rstrip()]
    assert not padded, f"{len(padded)} line(s) end in spaces: {padded}"


def test_report_in_a_pipe_fits_columns_with_no_trailing_spaces():
    proc = run("report", "--seq", "64", *SMALL)
    assert proc.returncode == 0, proc.stderr  # the default backends on the CPU: Flash and Math run
    assert "SDPA backends" in proc.stdout and "nothing measured" not in proc.stderr
    assert_fits(proc.stdout, 80)


def test_report_in_a_pipe_without_columns_keeps_160_and_no_trailing_spaces():
    proc = run("report", "--seq", "64", *SMALL, columns=None)
    assert proc.returncode == 0, proc.stderr
    assert_fits(proc.stdout, 160)
    assert max(len(line) for line in proc.stdout.splitlines()) > 80  # not Rich's 80: the table is not squeezed


def test_sweep_in_a_pipe_fits_columns_bullets_wrapped():
    proc = run("sweep", "--seq", "32,64", *SMALL)
    assert proc.returncode == 0, proc.stderr
    assert "crossovers and limits:" in proc.stdout and "• " in proc.stdout
    assert_fits(proc.stdout, 80)


def test_report_with_no_backend_that_can_run_exits_5_and_says_so_in_one_line(tmp_path: Path):
    path = tmp_path / "report.json"
    proc = run("report", "--seq", "64", *SMALL, "--backends", "cudnn", "--json", str(path))
    assert proc.returncode == 5, proc.stderr
    last = [line for line in proc.stderr.splitlines() if line.strip()][-1]
    assert last == "sdpa-tui: nothing measured: no selected backend ran this workload on cpu (cuDNN not eligible)"
    assert proc.stderr.count("nothing measured") == 1 and "Traceback" not in proc.stderr
    assert "cuDNN not eligible: " in proc.stdout  # the table and its reasons are still printed
    assert_fits(proc.stdout, 80)
    assert json.loads(path.read_text())["backends"][0]["status"] == "not_eligible"  # and the file still written


def test_sweep_in_which_no_backend_ran_exits_5():
    proc = run("sweep", "--seq", "32,64", *SMALL, "--backends", "cudnn,efficient")
    assert proc.returncode == 5, proc.stderr
    last = [line for line in proc.stderr.splitlines() if line.strip()][-1]
    assert last == ("sdpa-tui: nothing measured: no selected backend ran at any length on cpu "
                    "(cuDNN not eligible, Mem-efficient not eligible)"), proc.stderr
