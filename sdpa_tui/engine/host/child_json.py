"""A measuring child process with torch, spoken to in JSON: its input on stdin, one answer a line on stdout.
Everything it writes to stderr (torch's and Inductor's logs) stays out of the terminal; a failure is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from ...core.installation import IMPORT_ROOT


def ask(module: str, payload: dict[str, Any], timeout_s: float) -> tuple[list[dict[str, Any]], str]:
    """Run ``python -m module`` with ``payload``: its answers (one JSON object a line), and why it stopped short
    ("" when it exited cleanly with every line readable)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (IMPORT_ROOT, env.get("PYTHONPATH", "")) if p)
    try:
        proc = subprocess.run([sys.executable, "-m", module], input=json.dumps(payload), capture_output=True,
                              text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return [], f"no answer within {timeout_s:.0f} s"
    answers, unreadable = [], ""
    for line in proc.stdout.strip().splitlines():
        try:
            answers.append(json.loads(line))
        except ValueError as exc:
            unreadable = f"unreadable answer: {exc}"
    if proc.returncode != 0 or not answers:  # the answers given before it failed are kept
        return answers, (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1][:200]
    return answers, unreadable
