"""Run as ``sdpa-tui`` (pip's script: ``from sdpa_tui.cli import main``), the command's engines are spawned without
running that script again: multiprocessing re-runs a script main module in every spawned child, which imported the
whole command line in each engine before its own start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO

pytestmark = pytest.mark.torch_range


CONSOLE_SCRIPT = '''
import sys
from sdpa_tui.cli import main  # as the script pip installs for sdpa-tui
import multiprocessing
import probe

if __name__ == "__main__":
    if sys.argv[1:] == ["--run-main"]:
        try:
            main(["--version"])
        except SystemExit:
            pass
    context = multiprocessing.get_context("spawn")
    answers = context.Queue()
    child = context.Process(target=probe.answer, args=(answers,))
    child.start()
    print(answers.get(timeout=60))
    child.join()
'''

PROBE = '''
import sys

def answer(queue):
    queue.put("sdpa_tui.cli" in sys.modules)
'''


def child_imports_the_command_line(tmp_path: Path, *args: str) -> bool:
    (tmp_path / "sdpa-tui-script.py").write_text(CONSOLE_SCRIPT)
    (tmp_path / "probe.py").write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, str(tmp_path / "sdpa-tui-script.py"), *args], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return {"True": True, "False": False}[run.stdout.splitlines()[-1]]


def test_a_child_spawned_by_the_sdpa_tui_script_does_not_run_the_script_again(tmp_path):
    assert child_imports_the_command_line(tmp_path)  # the script's import alone: what multiprocessing does
    assert not child_imports_the_command_line(tmp_path, "--run-main")  # once the command line's main has run


def test_other_main_modules_are_left_as_they_are(monkeypatch):
    import types

    from sdpa_tui import cli
    from sdpa_tui.engine.host.spawned_main import spawn_children_without_the_script

    other = types.ModuleType("__main__")
    other.main = lambda: 0  # a user's program under watch, a test runner: a main of its own
    monkeypatch.setitem(sys.modules, "__main__", other)
    assert not spawn_children_without_the_script(cli.main)
    assert other.__spec__ is None
