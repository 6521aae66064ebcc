"""The host side of ``engine/compiled_cost.py``: runs it in a child process (torch lives there) and reads its answer.
Everything the child writes to stderr (torch's and Inductor's logs) stays out of the terminal; a failure is said
in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ..core.compiled_twins import CompiledCost, CostSpec
from .profiler_client import PACKAGE_ROOT


def measure_compiled(spec: CostSpec, timeout_s: float) -> tuple[CompiledCost | None, str]:
    """The compiled call alone against the eager one, or None and why not."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    try:
        proc = subprocess.run([sys.executable, "-m", "sdpa_tui.engine.compiled_cost"], input=json.dumps(spec.to_dict()),
                              capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return None, f"no answer within {timeout_s:.0f} s"
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        why = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return None, why[:200]
    try:
        return CompiledCost.from_dict(json.loads(lines[-1])), ""
    except (ValueError, TypeError) as exc:
        return None, f"unreadable answer: {exc}"
