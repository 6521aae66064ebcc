"""benchmarks/watch_cost/watch_program_cost.py on the CPU (a tiny Llama, the plain-torch decoder): the same program
plain and watched, alternated, its whole command timed. The numbers that count come from a GPU
(scripts/gpu/gpu-watch-cost.sh, PART=program); here the benchmark's runs, pairs and summary are checked, and the program
it runs (tests/watch_programs/training.py)."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys

import pytest
from support.paths import BENCHMARKS, PROGRAMS, REPO
from support.watching import ENV, watch

ROOT = REPO
SCRIPT = BENCHMARKS / "watch_cost" / "watch_program_cost.py"
PROGRAM = PROGRAMS / "training.py"
MEASUREMENTS = REPO / "docs" / "lab-notes" / "measurements"
H100_RUN = MEASUREMENTS / "h100-2026-11-27-s18" / "watch-program-cost.json"

pytestmark = pytest.mark.torch_range


def test_the_program_runs_plain_and_watched_in_alternation_and_its_whole_command_is_timed(tmp_path):
    pytest.importorskip("transformers")
    out = tmp_path / "cost.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu",
                           "--seconds", "1", "--rounds", "2", "--json", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["device"] == "cpu" and result["command"][0] == "watch_program_cost.py"
    assert result["gpu"] is None and list(result["calibrations"]) == ["tiny"]
    # each variant ran once before the calibration, a few steps, and is not among the target's runs
    assert [(w["size"], w["variant"]) for w in result["warm_ups"]] == [("tiny", "plain"), ("tiny", "watched")]
    assert "warm-up, tiny, watched" in proc.stdout
    calibration = result["calibrations"]["tiny"]
    assert calibration["steps"] == 5
    assert calibration["steady_step_ms"] == calibration["median_step_ms"]
    assert calibration["besides_steps_s"] == pytest.approx(calibration["wall_s"] - 5 * calibration["median_step_ms"] / 1e3)
    # three plain calibration runs, the target sized from the middle one by its time besides the steps
    tries = calibration["tries"]
    assert len(tries) == 3 and proc.stdout.count("calibration, tiny:") == 4
    assert calibration["besides_steps_s"] == sorted(t["besides_steps_s"] for t in tries)[1]
    (target,) = result["targets"]
    assert target["size"] == "tiny"
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
    per_round = watched["wall_s_added_pct"]["per_round"]
    assert per_round["n"] == 2
    assert f"{per_round['median']:+.1f}% [{per_round['min']:+.1f}..{per_round['max']:+.1f}]" in proc.stdout
    assert "~1-s program" in proc.stdout and "watched" in proc.stdout
    phases = ("before_program_s", "torch_import_s", "device_s", "build_s", "loop_s", "after_s")
    for run in runs["plain"] + runs["watched"]:  # the command's wall time, split at the program's own clock
        assert sum(run[p] for p in phases) == pytest.approx(run["wall_s"]) and min(run[p] for p in phases) >= 0
    # watched, torch is imported before the program's first line: the import moves out of the program's own time
    assert all(w["torch_import_s"] < p["torch_import_s"] for w, p in zip(runs["watched"], runs["plain"]))
    assert all(w["before_program_s"] > p["before_program_s"] for w, p in zip(runs["watched"], runs["plain"]))
    assert "before_program" in proc.stdout and watched["build_s"]["n"] == 2
    # each round's added seconds, split where the loop begins, add up to the round's added wall time
    split = watched["added_s"]
    walls = sorted(w["wall_s"] - p["wall_s"] for w, p in zip(runs["watched"], runs["plain"]))
    assert split["before_loop_s"]["n"] == split["from_loop_s"]["n"] == 2
    assert split["before_loop_s"]["median"] + split["from_loop_s"]["median"] == pytest.approx(sum(walls) / 2)
    assert f"the loop and the exit {split['from_loop_s']['median']:+.2f} s" in proc.stdout
    # and that part split again by where in the loop it fell, from each run's steps
    assert all(len(r["step_ms"]) == r["steps"] for r in runs["plain"] + runs["watched"])
    parts = watched["loop_split"]
    assert sum(parts[p]["median"] for p in ("first_steps_s", "after_evaluation_s", "other_steps_s", "outside_steps_s",
                                            "exit_s")) == pytest.approx(split["from_loop_s"]["median"], abs=1e-6)
    assert "the loop outside its steps (evaluations)" in proc.stdout


def test_each_target_runs_its_own_size_sized_from_that_size_s_calibration(tmp_path):
    pytest.importorskip("transformers")
    out = tmp_path / "cost.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--seconds", "1,2", "--size", "decoder,tiny",
                           "--rounds", "1", "--json", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    calibrations = result["calibrations"]
    assert sorted(calibrations) == ["decoder", "tiny"]
    assert calibrations["decoder"]["steps"] == 30 and calibrations["tiny"]["steps"] == 5
    benchmark = runpy.run_path(str(SCRIPT))
    for target, size in zip(result["targets"], ["decoder", "tiny"]):
        assert target["size"] == size
        assert target["steps"] == benchmark["target_steps"](target["seconds"], calibrations[size])
        assert all(run["steps"] == target["steps"] for runs in target["runs"].values() for run in runs)
    assert "steps, decoder)" in proc.stdout and "steps, tiny)" in proc.stdout


def test_rounds_added_to_an_earlier_result_keep_its_runs_and_steps_and_go_on_alternating(tmp_path):
    """A device call's limit is short of enough rounds of a 1-minute program: a second call adds its rounds to the
    first's result (the same machine), at its step count, with no calibration, and the summary is over all."""
    first, second = tmp_path / "first.json", tmp_path / "second.json"

    def bench(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--size", "tiny", "--seconds", "1",
                               "--no-warm-up", *extra], capture_output=True, text=True, cwd=ROOT, timeout=600)

    proc = bench("--rounds", "1", "--json", str(first))
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = bench("--rounds", "2", "--add-to", str(first), "--json", str(second))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "calibration," not in proc.stdout, "the earlier result's steps: nothing to calibrate"
    before, after = json.loads(first.read_text()), json.loads(second.read_text())
    (earlier,), (target,) = before["targets"], after["targets"]
    assert target["steps"] == earlier["steps"] and target["rounds"] == 3
    assert after["calibrations"] == before["calibrations"] and after["added_to"]["file"] == "first.json"
    for name in ("plain", "watched"):
        assert [r["round"] for r in target["runs"][name]] == [0, 1, 2]
        assert target["runs"][name][0] == earlier["runs"][name][0], "the earlier run kept as it was"
    # round 1 runs watched first (odd rounds), as a single run of three rounds would
    assert proc.stdout.index("round 1: watched") < proc.stdout.index("round 1: plain")
    assert target["summary"]["watched"]["wall_s_added_pct"]["per_round"]["n"] == 3
    moved = json.loads(first.read_text()) | {"host": "another-machine"}
    first.write_text(json.dumps(moved))
    proc = bench("--rounds", "1", "--add-to", str(first), "--json", str(second))
    assert proc.returncode != 0 and "another-machine" in proc.stderr, "another machine's rounds are not added"


@pytest.mark.parametrize(("seconds", "device", "size"), [(10, "cuda", "decoder"), (29, "cuda", "decoder"),
                                                         (30, "cuda", "large"), (60, "cuda", "large"),
                                                         (10, "cpu", "tiny"), (60, "cpu", "tiny")])
def test_a_gpu_s_short_target_runs_the_small_decoder_and_a_long_one_the_large_llama(seconds, device, size):
    assert runpy.run_path(str(SCRIPT))["default_size"](seconds, device) == size


def test_the_small_program_trains_without_transformers(tmp_path):
    """Its start-up is torch's import and the model built: a ``transformers`` that cannot be imported is first on the
    path, and the program still runs its steps and writes its clock."""
    blocked = tmp_path / "blocked" / "transformers"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('the decoder program imports no transformers')\n")
    out = tmp_path / "times.json"
    env = {**ENV, "PYTHONPATH": f"{blocked.parent}{os.pathsep}{ENV['PYTHONPATH']}"}
    proc = subprocess.run([sys.executable, str(PROGRAM), str(out), "3", "cpu", "decoder"], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-3000:]
    clock = json.loads(out.read_text())
    assert clock["started"] <= clock["loop"] <= clock["ended"]
    assert len(clock["step_ms"]) == 3 and all(ms > 0 for ms in clock["step_ms"])
    assert clock["evals"] == 0 and clock["device_name"] is None


def test_the_small_program_watched_shows_its_training_and_its_evaluation_signatures(tmp_path):
    """50 steps of the CPU's decoder (2 layers, a batch [2, 32]) and one evaluation on [2, 16]: each layer's causal
    SDPA call counted, the training one with gradients."""
    proc, report = watch(tmp_path, sys.executable, str(PROGRAM), str(tmp_path / "times.json"), "50", "cpu", "decoder")
    assert proc.returncode == 0, proc.stderr[-3000:]
    calls = {tuple(c["q_shape"]): c for c in report["calls"]}
    assert sorted(calls) == [(2, 4, 16, 16), (2, 4, 32, 16)]
    train, held_out = calls[(2, 4, 32, 16)], calls[(2, 4, 16, 16)]
    assert train["count"] == 50 * 2 and train["grad"] and train["causal"]
    assert held_out["count"] == 1 * 2 and not held_out["grad"] and held_out["causal"]
    assert json.loads((tmp_path / "times.json").read_text())["evals"] == 1


def test_a_target_is_sized_from_the_steady_step_not_from_a_mean_holding_the_warm_up():
    """The H100 run of 2026-11-27: its calibration's 30 steps had a mean of 141 ms (the first steps' warm-up in it)
    against a median of 58 ms, and its "60-s" target ran 34 s. Sized from the steady step, that target's steps would
    have made the plain runs measured there last about 60 s (each run's time besides its loop, plus the steps at the
    loop's own pace)."""
    sizing = runpy.run_path(str(SCRIPT))
    recorded = json.loads(H100_RUN.read_text())
    calibration = recorded["calibration"]
    assert calibration["mean_step_ms"] > 2 * calibration["median_step_ms"], "the warm-up this test is about"
    (target,) = [t for t in recorded["targets"] if t["seconds"] == 60]
    steps = sizing["target_steps"](60, sizing["sizing"](calibration))
    for plain in target["runs"]["plain"]:
        lasts = plain["wall_s"] - plain["loop_s"] + steps * plain["loop_s"] / plain["steps"]
        assert lasts == pytest.approx(60, rel=0.1)


@pytest.mark.parametrize(("name", "tag"), [("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H200", "h200"),
                                           ("NVIDIA A100-SXM4-80GB", "cuda"), (None, "cpu")])
def test_the_results_file_is_named_after_the_gpu_that_ran_it(name, tag):
    assert runpy.run_path(str(SCRIPT))["device_tag"](name) == tag


@pytest.mark.parametrize(("recorded", "fills"), [
    (REPO / "benchmarks" / "results" / "watch-program-cost-h200-2026-11-28-s24.json", False),
    (MEASUREMENTS / "h200-2026-11-28-s25" / "watch-program-cost-h200-decoder-8-rounds.json", True)])
def test_a_target_that_the_start_up_fills_is_said_to_measure_the_start_up(recorded, fills):
    """Two H200 starts of 2026-11-28 sized the 10-s decoder target: one's calibration took 8.9 s besides its steps
    (105 steps fitted in the rest), the other's 10.7 s (more than the target: the floor of 3 steps). The second is
    named for what it measures."""
    benchmark = runpy.run_path(str(SCRIPT))
    result = json.loads(recorded.read_text())
    sized = benchmark["sizing"](result["calibrations"]["decoder"])
    note = benchmark["start_up_note"](10, sized)
    assert (note is not None) == fills
    assert (benchmark["target_steps"](10, sized) == benchmark["FLOOR_STEPS"]) == fills
    if fills:
        assert f"{sized['besides_steps_s']:.2f} s besides its steps" in note and "not a 10-s training run" in note


def test_each_round_s_added_time_is_split_where_the_loop_begins():
    """Three H200 starts of 2026-11-29 (the 10-s decoder, 9 to 12 rounds each): what watch added per round before the
    loop (the start-up: torch's import and torch._dynamo's, plain and watched alike) swung by seconds, what it added
    from the loop on (its windows and checks, the exit) by a fraction of that. The split is exact: before and from the
    loop add up to each round's added wall time."""
    benchmark = runpy.run_path(str(SCRIPT))
    for path in sorted((MEASUREMENTS / "h200-2026-11-29-s29").glob("watch-program-cost-h200-decoder-*.json")):
        (target,) = json.loads(path.read_text())["targets"]
        plain, watched = target["runs"]["plain"], target["runs"]["watched"]
        split = benchmark["added_split"](watched, plain)
        per_round = [(w["start_up_s"] - p["start_up_s"], w["wall_s"] - p["wall_s"]) for w, p in zip(watched, plain)]
        before = sorted(b for b, _ in per_round)
        after = sorted(wall - b for b, wall in per_round)
        assert split["before_loop_s"]["min"] == pytest.approx(before[0])
        assert split["from_loop_s"]["max"] == pytest.approx(after[-1])
        assert split["before_loop_s"]["n"] == len(plain) >= 9
        width = {key: split[key]["max"] - split[key]["min"] for key in split}
        assert width["before_loop_s"] > 1.5 * width["from_loop_s"], path.name
        assert 0 < split["from_loop_s"]["median"] < 1.0, "the windows' and checks' fixed part, under a second"
        summary = benchmark["summarise"](target["runs"])
        lines = benchmark["added_split_lines"](summary)
        (line,) = [text for text in lines if "added per round" in text]
        assert f"before the loop {split['before_loop_s']['median']:+.2f} s" in line
        # and where the median round lies: between two of the rounds' own added percentages
        (where,) = [text for text in lines if "confidence" in text]
        interval = summary["watched"]["wall_s_added_pct"]["median_round_interval"]
        added = sorted((w["wall_s"] / p["wall_s"] - 1) * 100 for w, p in zip(watched, plain))
        assert added[0] <= interval["low"] < interval["high"] <= added[-1] and interval["n"] == len(added)
        assert f"{interval['low']:+.1f}% to {interval['high']:+.1f}%" in where


def test_what_watch_added_from_the_loop_on_is_split_by_where_in_the_loop_it_fell():
    """Each part of the loop is the watched run's time there less the plain run's beside it: the first steps (a new
    signature's first window and checks), the step after each evaluation (the evaluation's window stops in it), the
    other steps, the evaluations between steps, the exit; the parts add up to the round's added loop and exit."""
    benchmark = runpy.run_path(str(SCRIPT))

    def run(steps_ms: list[float], loop_s: float, after_s: float) -> dict:
        return {"step_ms": steps_ms, "eval_every": 4, "loop_s": loop_s, "after_s": after_s,
                "start_up_s": 5.0, "wall_s": 5.0 + loop_s + after_s}

    plain = [run([400.0, 20.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0], 0.60, 1.0)]
    # watched: 300 ms more in the first steps, 50 ms in the step after the first evaluation (index 4) and 30 ms in the
    # one after the second (index 8), 1 ms in each of the 5 others, 40 ms more outside the steps, 20 ms at exit
    watched = [run([500.0, 210.0, 20.0, 11.0, 60.0, 11.0, 11.0, 11.0, 40.0, 11.0], 0.60 + 0.441, 1.02)]
    split = benchmark["loop_split"](watched, plain)
    assert split["first_steps_s"]["median"] == pytest.approx(0.300)
    assert split["after_evaluation_s"]["median"] == pytest.approx(0.080)
    assert split["other_steps_s"]["median"] == pytest.approx(0.005) and split["other_steps"] == 5
    assert split["outside_steps_s"]["median"] == pytest.approx(0.441 - 0.385)
    assert split["exit_s"]["median"] == pytest.approx(0.020)
    added_from_loop = benchmark["added_split"](watched, plain)["from_loop_s"]["median"]
    assert sum(split[p]["median"] for p in benchmark["LOOP_PARTS"]) == pytest.approx(added_from_loop)
    row = {"plain": {"wall_s": {"median": 6.6}},
           "watched": {"added_s": benchmark["added_split"](watched, plain), "loop_split": split}}
    lines = benchmark["added_split_lines"](row)
    assert "the other 5 steps +0.005 s [+0.005..+0.005] (+1.00 ms a step)" in lines[1]
    # a run recorded before the steps were kept has no split
    assert benchmark["loop_split"]([{k: v for k, v in watched[0].items() if k != "step_ms"}], plain) is None
