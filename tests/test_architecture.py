"""Architecture contracts: import-linter's layers, no torch in the UI-side process, and ruff's checks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_import_linter_contracts_are_kept():
    """The contracts in pyproject.toml: core/engine/telemetry/exports never import the UI, core never torch,
    layers, and no import cycle between the UI's modules (app and snapshots once imported each other)."""
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


TYPE_CHECKED = ["sdpa_tui/core", "sdpa_tui/engine/host", "sdpa_tui/engine/record_pipe.py",
                "sdpa_tui/engine/profiler/profiler_client.py"]
"""The core (records, engine commands, the wire format, the EngineHandle Protocol, the lab controller, the report
models) and the engine's host side, which the UI and the commands call across the process seam."""


def test_mypy_finds_nothing_in_the_core_and_the_engines_host_side(tmp_path):
    """Their types are checked (``[tool.mypy]`` in pyproject.toml)."""
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path), *TYPE_CHECKED],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


UI_SIDE_MODULES = [
    "sdpa_tui",
    "sdpa_tui.cli",
    "sdpa_tui.core",
    "sdpa_tui.core.lab.backend_state",
    "sdpa_tui.core.backends",
    "sdpa_tui.core.protocol.engine_commands",
    "sdpa_tui.core.traces.kernel_names",
    "sdpa_tui.core.traces.kernel_short_names",
    "sdpa_tui.core.protocol.records",
    "sdpa_tui.core.lab.session",
    "sdpa_tui.core.stats",
    "sdpa_tui.core.traces.trace",
    "sdpa_tui.core.protocol.wire_format",
    "sdpa_tui.core.workload",
    "sdpa_tui.engine.host.client",
    "sdpa_tui.engine.host.headless",
    "sdpa_tui.engine.record_pipe",
    "sdpa_tui.exports.lab.report_data",
    "sdpa_tui.exports.lab.report_tables",
    "sdpa_tui.commands.report",
    "sdpa_tui.engine.host.supervisor",
    "sdpa_tui.engine.host.device_engines",
]


def test_ui_side_modules_do_not_import_torch():
    """Importing these in a fresh interpreter must not import torch (seconds, and CUDA init in the UI)."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {UI_SIDE_MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_the_check_above_would_see_torch():
    """The same probe sees torch when an engine-side module is imported (so the test above can fail)."""
    pytest.importorskip("torch")
    code = "import sys, sdpa_tui.engine.measuring.sdpa_call; print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "True"
