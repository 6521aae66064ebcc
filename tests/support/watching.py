"""Programs run under ``sdpa-tui watch --report`` and run plainly, from the checkout, as the watch tests compare them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support.paths import REPO

ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def watch(tmp_path: Path, *program: str, timeout: float = 240, columns: int | None = None, advice: bool = False,
          flex: bool = True, budget: float = 300) -> tuple[subprocess.CompletedProcess, dict]:
    """``watch --report`` run headless; ``columns``: the terminal width Rich's table is drawn for; ``advice``:
    measure the alternatives after the program (off here unless asked: each costs an engine start) within
    ``budget`` seconds (long: these tests check what is measured, not when it stops); ``flex``: FlexAttention among
    them (it compiles for seconds)."""
    report = tmp_path / "calls.json"
    proc = subprocess.run(
        [sys.executable, "-m", "sdpa_tui", "watch", "--report", str(report),
         *(["--advice-budget", str(budget)] if advice else ["--no-advice"]),
         *([] if flex else ["--no-flex"]), "--", *program],
        capture_output=True, text=True, timeout=timeout, cwd=REPO, stdin=subprocess.DEVNULL,
        env={**ENV, "COLUMNS": str(columns)} if columns else ENV,
    )
    return proc, json.loads(report.read_text()) if report.exists() else {}


def plain(*program: str) -> str:
    return subprocess.run(list(program), capture_output=True, text=True, timeout=240, env=ENV, cwd=REPO,
                          check=True).stdout
