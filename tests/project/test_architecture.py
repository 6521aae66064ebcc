"""Architecture contracts: import-linter's layers, no torch in the UI-side process, and ruff's checks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from support.paths import REPO

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib



def test_import_linter_contracts_are_kept():
    """The contracts in pyproject.toml: the floors, the core by concern, the engine by process, the torch side and the
    watched program's probe imported by nothing else, torch only in the child processes, no Textual below the UI, and
    no import cycle between the UI's modules (app and snapshots once imported each other)."""
    command = [shutil.which("lint-imports")] if shutil.which("lint-imports") else None
    if command is None:  # the console script is not on PATH: run import-linter's entry point directly
        command = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(command + ["--no-cache"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "broken" in output and " 0 broken" in output, output


def test_ruff_finds_nothing():
    """pyflakes' checks, pycodestyle's errors and warnings, and sorted imports (``[tool.ruff]`` in pyproject.toml)."""
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "sdpa_tui", "tests", "benchmarks",
                           "scripts"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


CONTRACTS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
TORCH_SIDE = sorted(line.split(" -> ")[0].removesuffix(".**")
                    for contract in CONTRACTS if contract["name"] == "Only the child processes import torch"
                    for line in contract["ignore_imports"] if line.endswith(".** -> torch"))
"""The folders whose code runs in a child process with torch (the engine, its profiler, the cost children, the watched
program's probe), as ``pyproject.toml``'s contracts name them."""


def test_mypy_finds_nothing_in_the_core_and_the_engines_host_side(tmp_path):
    """The core (records, engine commands, the wire format, the EngineHandle Protocol, the lab controller, the report
    models) and the engine's host side, which the UI and the commands call across the process seam: the files
    ``[tool.mypy]`` in pyproject.toml names."""
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sdpa_tui/engine/host" in tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]["files"]


USERS_PROCESS = ["sdpa_tui.api", "sdpa_tui.watch.from_python"]
"""The Python API (``with watch():`` and its hooks for IPython and the trainers): it runs in the user's own process,
with torch, and installs the probe there."""


def host_side_modules() -> list[str]:
    """Every module of the package outside the torch side's folders and the Python API's (``__main__`` runs the
    command line)."""
    names = []
    for path in sorted((REPO / "sdpa_tui").rglob("*.py")):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        if name != "sdpa_tui.__main__" and not any(name == f or name.startswith(f + ".")
                                                   for f in TORCH_SIDE + USERS_PROCESS):
            names.append(name)
    return names


def test_the_torch_side_is_named_by_its_folders():
    assert TORCH_SIDE == ["sdpa_tui.engine.child", "sdpa_tui.engine.costs", "sdpa_tui.engine.measuring",
                          "sdpa_tui.engine.profiler", "sdpa_tui.watch.probe"]
    assert {"sdpa_tui.cli", "sdpa_tui.engine.host.client", "sdpa_tui.ui.app", "sdpa_tui.watch",
            "sdpa_tui.watch.program.watched_program", "sdpa_tui.watch.states.state_socket",
            "sdpa_tui.watch.advice.advise", "sdpa_tui.commands.report"} <= set(host_side_modules())


def test_host_side_modules_do_not_import_torch():
    """Importing every module of the UI process's side in one fresh interpreter must not import torch (seconds, and
    CUDA init in the UI): the commands, the UI, watch's parent side, the engine's host side, the core, the exports."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {host_side_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


REPORT_MODULES = ("sdpa_tui.core.calls.watch_report", "sdpa_tui.core.calls.advice", "sdpa_tui.exports.metrics.metrics_server")


def _imported_of(modules: str, wanted: tuple[str, ...]) -> list[str]:
    code = f"import json, sys, {modules}; print(json.dumps(sorted(m for m in {wanted!r} if m in sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_what_runs_before_the_watched_program_leaves_the_report_for_later():
    """``sdpa-tui watch`` spawns the program after its command's imports, and the probe installs before the program's
    first line: neither imports the report, the advice or the metrics server (the program's start would wait for
    them; ``run_headless`` imports them while the program starts). The command's run does import them."""
    assert _imported_of("sdpa_tui.cli, sdpa_tui.commands.watch", REPORT_MODULES) == []
    assert _imported_of("sdpa_tui.watch.report.report_text", REPORT_MODULES[:1]) == list(REPORT_MODULES[:1])
    pytest.importorskip("torch")
    assert _imported_of("sdpa_tui.watch.probe.install", REPORT_MODULES) == []


def test_the_check_above_would_see_torch():
    """The same probe sees torch when an engine-side module is imported (so the test above can fail)."""
    pytest.importorskip("torch")
    code = "import sys, sdpa_tui.engine.measuring.sdpa_call; print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "True"
