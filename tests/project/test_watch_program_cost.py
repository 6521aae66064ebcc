"""benchmarks/watch_cost/watch_program_cost.py on the CPU (a tiny Llama): the same program plain and watched, alternated,
its whole command timed. The numbers that count come from a GPU (scripts/gpu/gpu-watch-cost.sh, PART=program); here the
benchmark's runs, pairs and summary are checked."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.paths import REPO

ROOT = REPO

pytestmark = pytest.mark.torch_range


def test_the_program_runs_plain_and_watched_in_alternation_and_its_whole_command_is_timed(tmp_path):
    pytest.importorskip("transformers")
    out = tmp_path / "cost.json"
    proc = subprocess.run([sys.executable, "benchmarks/watch_cost/watch_program_cost.py", "--device", "cpu",
                           "--seconds", "1", "--rounds", "2", "--json", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["device"] == "cpu" and result["size"] == "tiny" and result["command"][0] == "watch_program_cost.py"
    (target,) = result["targets"]
    runs = target["runs"]
    assert [r["round"] for r in runs["plain"]] == [0, 1] and [r["round"] for r in runs["watched"]] == [0, 1]
    for run in runs["plain"] + runs["watched"]:
        assert run["steps"] == target["steps"] >= 3
        assert run["wall_s"] > run["program_s"] > 0 and run["median_step_ms"] > 0
    assert all(r["windows"] == 0 for r in runs["watched"]), "no CUDA: no profiler window"
    watched = target["summary"]["watched"]
    plain_wall = sorted(r["wall_s"] for r in runs["plain"])
    watched_wall = sorted(r["wall_s"] for r in runs["watched"])
    expected = (sum(watched_wall) / 2) / (sum(plain_wall) / 2) - 1  # the median of two is their mean
    assert watched["wall_s_added_pct"]["of_medians"] == pytest.approx(expected * 100)
    assert watched["wall_s_added_pct"]["per_round"]["n"] == 2
    assert "~1-s program" in proc.stdout and "watched" in proc.stdout
