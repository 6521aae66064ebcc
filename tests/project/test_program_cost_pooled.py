"""The median round's interval (benchmarks/watch_cost/watch_program_cost.py) and the pool of several runs' rounds
(benchmarks/watch_cost/program_cost_pooled.py), on the H200 runs of the 10-s decoder recorded on 2026-11-29."""

from __future__ import annotations

import json
import random
import runpy
import statistics
import subprocess
import sys

import pytest
from support.paths import BENCHMARKS, REPO

COST = BENCHMARKS / "watch_cost" / "watch_program_cost.py"
POOLED = BENCHMARKS / "watch_cost" / "program_cost_pooled.py"
H200 = REPO / "docs" / "lab-notes" / "measurements" / "h200-2026-11-29-s31"
RUNS = [H200 / "watch-program-cost-h200-decoder-9-rounds-call-4.json",
        H200 / "watch-program-cost-h200-decoder-5-rounds-call-5.json"]


def median_interval(values, level=0.9):
    return runpy.run_path(str(COST))["median_interval"](values, level)


@pytest.mark.parametrize("n", [5, 9, 18, 29])
def test_the_interval_holds_the_median_at_least_as_often_as_it_says(n):
    """Rounds drawn from a skewed spread (a start-up's swing: most rounds near 0 %, some far above), whose median is
    known: over 3,000 draws of n rounds the interval holds it at least 90 % of the time, as its coverage says."""
    rng = random.Random(7)
    draws = [[rng.lognormvariate(0, 1) for _ in range(n)] for _ in range(3000)]
    intervals = [median_interval(d) for d in draws]
    held = sum(i["low"] <= 1.0 <= i["high"] for i in intervals) / len(draws)  # lognormal(0, 1)'s median is 1
    assert held >= 0.9 - 0.015
    assert held == pytest.approx(intervals[0]["coverage"], abs=0.02)
    assert all(i["coverage"] >= 0.9 and i["n"] == n for i in intervals)


def test_too_few_rounds_for_the_confidence_asked_give_no_interval():
    assert median_interval([1.0, 2.0, 3.0, 4.0]) is None  # 4 rounds: 87.5 % at most
    assert median_interval([1.0, 2.0, 3.0, 4.0], level=0.8)["coverage"] == 0.875
    assert median_interval([3.0, 1.0, 2.0, 5.0, 4.0]) == {"low": 1.0, "high": 5.0, "coverage": 0.9375, "level": 0.9,
                                                          "n": 5}


def per_round(path):
    (target,) = json.loads(path.read_text())["targets"]
    plain = {r["round"]: r["wall_s"] for r in target["runs"]["plain"]}
    return [(w["wall_s"] / plain[w["round"]] - 1) * 100 for w in target["runs"]["watched"]]


def test_the_pool_pairs_each_results_rounds_and_summarises_them_together(tmp_path):
    out = tmp_path / "pooled.json"
    proc = subprocess.run([sys.executable, str(POOLED), "--size", "decoder", "--seconds", "10", "--json", str(out),
                           *map(str, RUNS)], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    rounds = [per_round(path) for path in RUNS]
    assert [r["rounds"] for r in result["results"]] == [9, 5] and result["pooled"]["rounds"] == 14
    for got, expected in zip(result["results"], rounds):
        assert got["median_round_pct"] == pytest.approx(statistics.median(expected))
        assert got["gpu"] == "NVIDIA H200"
    together = sorted(rounds[0] + rounds[1])
    assert result["pooled"]["median_round_pct"] == pytest.approx(statistics.median(together))
    interval = result["pooled"]["median_round_interval"]
    assert together[0] < interval["low"] <= result["pooled"]["median_round_pct"] <= interval["high"] < together[-1]
    assert "pooled (2 results)" in proc.stdout and all(path.name[-20:] in proc.stdout for path in RUNS)


def test_a_result_without_the_program_asked_for_is_refused(tmp_path):
    proc = subprocess.run([sys.executable, str(POOLED), "--size", "large", "--seconds", "60",
                           "--json", str(tmp_path / "x.json"), str(RUNS[0])],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2 and "no large rounds at 60 s" in proc.stderr
