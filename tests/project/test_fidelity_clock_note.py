"""benchmarks/clocks/fidelity.py: a failed comparison whose two sides ran at different SM clocks says so, on the H200
run where it happened (docs/lab-notes/measurements/h200-2026-11-29-s27/fidelity-h200.json: the independent CUPTI profile
of Flash at [2, 8, 2048, 256] bf16 ran at 1,845 MHz, the engine's kernel clock at 1,980)."""

from __future__ import annotations

import json
import runpy

from support.paths import BENCHMARKS, REPO

RUN = REPO / "docs" / "lab-notes" / "measurements" / "h200-2026-11-29-s27" / "fidelity-h200.json"
clock_note = runpy.run_path(str(BENCHMARKS / "clocks" / "fidelity.py"))["clock_note"]


def notes(result: dict) -> list[tuple[str, str, str]]:
    return [(r["label"], r["backend"], clock_note(r["engine"], r["independent"], r["kernel_pass"], r["gpu_pass"]))
            for r in result["results"] if "independent" in r]


def test_the_h200_runs_failed_comparison_names_the_clocks_and_no_passed_one_gets_a_note():
    found = [(label, backend, note) for label, backend, note in notes(json.loads(RUN.read_text())) if note]
    assert found == [("2x8x2048x256 bf16", "FLASH_ATTENTION",
                      "SM clock: the engine's kernel at 1980 MHz, the CUPTI at 1845 MHz (6.8% apart)")]


def test_a_failed_comparison_at_the_same_clock_gets_no_note_and_a_failed_gpu_call_names_the_replays_clock():
    engine = {"sm_mhz": {"kernel": 1980, "gpu": 1980}}
    independent = {"sm_mhz": {"cupti": 1965, "replay": 1700}}
    assert clock_note(engine, independent, kernel_pass=False, gpu_pass=True) == ""
    assert clock_note(engine, independent, kernel_pass=True, gpu_pass=False) == (
        "SM clock: the engine's GPU/call at 1980 MHz, the replay at 1700 MHz (14.1% apart)")
    assert clock_note({"sm_mhz": {}}, independent, kernel_pass=False, gpu_pass=False) == ""  # no NVML: nothing said
