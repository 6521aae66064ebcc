"""``sdpa-tui watch`` runs a program as plain python does: what the program is given, the traceback
and one-line errors the user sees, the exit code; a ``--report`` it cannot write stops it before the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO

pytestmark = pytest.mark.torch_range

ENV = {**os.environ, "PYTHONPATH": str(REPO)}
SCRIPT = "./tests/watch_programs/as_python.py"  # python joins it to the working directory as it is, ./ kept


def run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(command), capture_output=True, text=True, timeout=240, env=ENV, cwd=REPO,
                          stdin=subprocess.DEVNULL)


def watch(report: Path, *program: str) -> subprocess.CompletedProcess:
    return run(sys.executable, "-m", "sdpa_tui", "watch", "--report", str(report), "--", *program)


@pytest.mark.parametrize(("end", "code"), [("raise", 1), ("interrupt", -signal.SIGINT), ("3", 3)])
def test_the_program_is_given_and_ends_as_under_python(tmp_path, end, code):
    plain = run(sys.executable, SCRIPT, end)
    watched = watch(tmp_path / "calls.json", sys.executable, SCRIPT, end)
    assert plain.returncode == code
    assert watched.returncode == (code if code >= 0 else 128 - code), watched.stderr
    assert watched.stdout.splitlines()[0] == plain.stdout.strip()  # __file__, argv, sys.path[0], __main__
    assert watched.stderr == plain.stderr  # the traceback starts at the script's <module>, as python's
    report = json.loads((tmp_path / "calls.json").read_text())
    assert report["exit_code"] == code and (report["error"] or "") == (plain.stderr if code != 3 else "")


@pytest.mark.parametrize("program", [["nothere.py"], ["-m", "nothere_sdpa_tui"]])
def test_a_missing_script_or_module_gives_pythons_one_line(tmp_path, program):
    plain = run(sys.executable, *program)
    watched = watch(tmp_path / "calls.json", sys.executable, *program)
    assert plain.stderr.count("\n") == 1 and ("No such file" in plain.stderr or "No module" in plain.stderr)
    assert (watched.returncode, watched.stderr) == (plain.returncode, plain.stderr)  # 2 for a script, 1 a module
    if program == ["nothere.py"]:  # nothing else: no empty table, no report
        assert watched.stdout == "" and not (tmp_path / "calls.json").exists()


@pytest.mark.parametrize("where", ["directory", "missing folder", "unwritable folder", "a folder no one writes"])
def test_a_report_that_cannot_be_written_stops_watch_before_the_program(tmp_path, where):
    report = {"directory": tmp_path, "missing folder": tmp_path / "no" / "calls.json",
              "unwritable folder": tmp_path / "locked" / "calls.json",
              "a folder no one writes": Path("/proc/calls.json")}[where]  # root too
    if where == "unwritable folder":
        if os.geteuid() == 0:
            pytest.skip("root may write in any folder")
        report.parent.mkdir(mode=0o500)
    proc = watch(report, sys.executable, SCRIPT, "raise")
    assert proc.returncode == 2 and proc.stdout == ""  # the program, which prints first thing, never ran
    assert proc.stderr.startswith(f"sdpa-tui watch: error: --report {report}: ") and proc.stderr.count("\n") == 1
    assert ".sdpa-tui-" not in proc.stderr
