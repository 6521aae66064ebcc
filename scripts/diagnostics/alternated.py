"""A diagnostic's variants run in fresh processes, alternated over rounds (the order reversed every other round, so
that no variant always follows the same one). The diagnostic runs itself as ``script --child VARIANT ARGS...``; the
child prints one JSON line last. Each line is echoed as it comes (floats rounded); a child that fails ends the run
with its stderr's tail."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def alternated_runs(script: str, variants: Sequence[str], rounds: int, args: Sequence[str] = (),
                    digits: int = 3) -> dict[str, list[dict]]:
    """Each variant's results, ``rounds`` of each, in the order they ran."""
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    for r in range(rounds):
        for v in variants if r % 2 == 0 else variants[::-1]:
            proc = subprocess.run([sys.executable, script, "--child", v, *args], capture_output=True, text=True,
                                  cwd=ROOT, timeout=300)
            if proc.returncode != 0:
                sys.exit(f"{v} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            runs[v].append(got)
            print(json.dumps({k: round(x, digits) if isinstance(x, float) else x for k, x in got.items()}), flush=True)
    return runs
