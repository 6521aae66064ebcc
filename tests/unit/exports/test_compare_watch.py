"""``sdpa-tui compare`` of two ``watch --report`` files: a program watched on the CPU, then watched again with its
top advice applied (``tests/support/advice_apply.py``; the fixtures are the two real reports, paths made relative)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.compare_command import H100, run
from support.paths import FIXTURES

WATCH = FIXTURES / "watch"
BEFORE = WATCH / "advised-context-cpu-before.json"
AFTER = WATCH / "advised-context-cpu-after.json"


def test_the_advice_applied_shows_as_the_backend_and_time_that_changed_and_advice_that_is_gone(capsys):
    code, out, err = run(capsys, BEFORE, AFTER, "--json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    (call,) = doc["calls"]  # the same site, though the changed program lives in another folder
    assert call["site"] == "advised_context.py:19"
    assert call["backend"] == ["MATH", "FLASH_ATTENTION"] and call["count"] == [12, 12]
    assert call["clock"] == "host", "no kernel clock on the CPU"
    assert call["ratio"] < 0.5 and not call["slower"]
    assert call["best"] == ["FLASH_ATTENTION", None], "advised in A, nothing left to advise in B"
    assert doc["saving_us"][0] > 0 and doc["saving_us"][1] == 0
    assert doc["sdpa_us"][1] < doc["sdpa_us"][0]


def test_the_other_way_round_is_slower_and_exits_1_in_each_format(capsys):
    code, out, _ = run(capsys, AFTER, BEFORE)
    assert code == 1
    assert "Flash → Math" in out and "1 call site(s) slower in B" in out
    code, out, _ = run(capsys, AFTER, BEFORE, "--markdown")
    assert code == 1 and "| advised_context.py:19 | q[1, 4, 1024, 64] kv[1, 4, 1024, 64] fp32 |" in out
    code, _, _ = run(capsys, AFTER, BEFORE, "--threshold", "500%")
    assert code == 0, "within the threshold"


def test_a_site_with_two_signatures_pairs_each_with_its_own(tmp_path, capsys):
    def two(source: Path, name: str, scale: float) -> Path:
        doc = json.loads(source.read_text())
        other = json.loads(json.dumps(doc["calls"][0]))
        other["q_shape"][2] = other["kv_shape"][2] = 2048
        other["host_us"]["median"] *= 4 * scale
        doc["calls"].append(other)
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        return path

    code, out, _ = run(capsys, two(BEFORE, "a.json", 1.0), two(BEFORE, "b.json", 2.0), "--json")
    calls = json.loads(out)["calls"]
    assert [c["ratio"] for c in calls] == [1.0, 2.0] and code == 1, "only the longer signature got slower"


def test_a_watch_report_against_a_lab_report_exits_2_in_one_line(capsys):
    code, out, err = run(capsys, BEFORE, H100 / "report-small.json")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "is a watch report and" in err and "compare two of a kind" in err


def test_a_watch_report_of_another_schema_exits_2(tmp_path, capsys):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({**json.loads(BEFORE.read_text()), "schema_version": 1}))
    code, _, err = run(capsys, old, AFTER)
    assert code == 2 and "schema version 1" in err


def moved(tmp_path: Path, name: str, edit) -> Path:
    doc = json.loads(BEFORE.read_text())
    for call in doc["calls"]:
        edit(call)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_watch_reports_of_other_programs_or_other_shapes_are_not_comparable(tmp_path, capsys):
    other_program = moved(tmp_path, "other.json", lambda c: c.update(site="serve.py:80"))
    code, out, err = run(capsys, BEFORE, other_program)
    assert (code, out) == (3, "") and err.count("\n") == 1
    assert err.startswith("sdpa-tui compare: not comparable: no call site of ")

    def longer(call: dict) -> None:
        call["q_shape"][2] = call["kv_shape"][2] = 4096
        call["host_us"]["median"] *= 16

    code, out, err = run(capsys, BEFORE, moved(tmp_path, "longer.json", longer))
    assert (code, out) == (3, "") and "ran other shapes" in err, "16x slower at 4x the length is no regression"


def test_a_site_that_ran_other_shapes_is_not_compared_the_others_are(tmp_path, capsys):
    def with_second_site(source: Path, name: str, length: int, scale: float) -> Path:
        doc = json.loads(source.read_text())
        other = json.loads(json.dumps(doc["calls"][0]))
        other["site"] = "advised_context.py:40"
        other["q_shape"][2] = other["kv_shape"][2] = length
        other["host_us"]["median"] *= scale
        doc["calls"].append(other)
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        return path

    code, out, _ = run(capsys, with_second_site(BEFORE, "a.json", 1024, 1.0), with_second_site(BEFORE, "b.json", 8192, 40.0),
                       "--json")
    same, other = json.loads(out)["calls"]
    assert same["ratio"] == 1.0 and same["same_work"]
    assert other["ratio"] is None and not other["same_work"] and not other["slower"]
    assert code == 0


HALF_CLEAN = WATCH / "half-backward-cpu-clean.json"
HALF_NAN = WATCH / "half-backward-cpu-nan.json"
"""``tests/watch_programs/half_backward.py`` watched on the CPU (2026-11-27): at ``1 1`` its gradients are finite;
at ``30 3e4`` its fp16 backward overflows, dq and dk non-finite."""


def test_a_call_whose_gradients_went_nan_in_b_is_a_regression_and_says_which(capsys):
    code, out, _ = run(capsys, HALF_CLEAN, HALF_NAN, "--json")
    (call,) = json.loads(out)["calls"]
    assert call["check"] == ["ok", "dq/dk NaN/Inf"] and call["check_failed"] and code == 1
    code, out, _ = run(capsys, HALF_CLEAN, HALF_NAN, "--markdown")
    assert code == 1 and "| ok → dq/dk NaN/Inf |" in out
    assert "1 call site(s) whose outputs or gradients fail their check in B" in out


def test_gradients_that_became_finite_in_b_are_no_regression(capsys):
    code, out, _ = run(capsys, HALF_NAN, HALF_CLEAN, "--json", "--threshold", "1000%")
    (call,) = json.loads(out)["calls"]
    assert call["check"] == ["dq/dk NaN/Inf", "ok"] and not call["check_failed"] and code == 0


IDLE, BUSY = WATCH / "decoder-cpu-idle.json", WATCH / "decoder-cpu-busy.json"
"""The CPU's decoder (``tests/watch_programs/training.py … 400 cpu decoder``) watched on the 2-core VM idle, then beside
three spinning processes: watch marked both of its signatures' times as measured on a busy host."""


def test_times_measured_on_a_busy_host_are_marked_on_their_side_and_the_summary_says_how_busy(capsys):
    code, out, _ = run(capsys, IDLE, BUSY, "--markdown")
    assert code == 0, "marked, not a verdict: within the threshold the exit code is as before"
    assert "| 66.5 → 70.3* (1.06x) host |" in out and "| 32.3 → 31.3* (0.97x) host |" in out
    assert "* measured in B, the CPUs were busy beyond the program (tasks waited for a core 100% of the time" in out
    code, out, _ = run(capsys, BUSY, IDLE, "--json")
    doc = json.loads(out)
    assert [c["contended"] for c in doc["calls"]] == [[True, False], [True, False]]
    assert doc["contention"][0].startswith("the CPUs were busy beyond the program") and doc["contention"][1] is None
    code, out, _ = run(capsys, IDLE, IDLE)
    assert "*" not in out and "busy" not in out, "nothing marked where neither run was busy"


def comparison_lines(a: Path, b: Path, width: int) -> list[tuple[str, bool]]:
    from sdpa_tui.exports.compare.watch_diff import compare_watch_reports, watch_comparison_lines

    comparison = compare_watch_reports(json.loads(a.read_text()), json.loads(b.read_text()), 0.1, str(a), str(b))
    return watch_comparison_lines(comparison, width)


def row_of(lines: list[tuple[str, bool]], site_end: str) -> int:
    return next(i for i, (text, _) in enumerate(lines) if text.split("  ")[0].endswith(site_end))


@pytest.mark.parametrize("width", [80, 100, 120])
def test_at_80_to_120_columns_each_site_is_one_line_of_whole_numbers_its_advice_and_check_under_it(width):
    """A terminal of 80 to 120 columns (issue 36's widths): every line fits, a call site's backend, count, time
    pair and ratio stay on its line, the call's words wrap under it, and the advice (the advised program) and a
    failing check (the fp16 backward that overflowed) go on lines of their own beneath it, in the regression's
    red where B regressed."""
    advised = comparison_lines(BEFORE, AFTER, width)
    assert all(len(text) <= width for text, _ in advised), [t for t, _ in advised if len(t) > width]
    i = row_of(advised, ".py:19")
    assert "Math → Flash" in advised[i][0] and "37,852 → 12,736" in advised[i][0] and "0.34x" in advised[i][0]
    advice = next(text for text, _ in advised[i + 1:] if "advice:" in text)
    assert advice.strip() == "advice: Flash → –, saving 23,529 → – µs a call"
    assert not any(red for _, red in advised), "faster in B: nothing in red"

    busy = comparison_lines(IDLE, BUSY, width)
    assert all(len(text) <= width for text, _ in busy)
    rows = [text for text, _ in busy if text.startswith("training.py:61")]
    assert len(rows) == 2 and "66.5 → 70.3*" in rows[0] and "1.06x" in rows[0] and rows[0].endswith("ok")
    assert "32.3 → 31.3*" in rows[1] and "0.97x" in rows[1]
    assert "host's clock" in " ".join(text for text, _ in busy[:4]), "the clock said once, above the table"

    nan = comparison_lines(HALF_CLEAN, HALF_NAN, width)
    assert all(len(text) <= width for text, _ in nan)
    i = row_of(nan, "half_backward.py:15")
    assert "2.49x" in nan[i][0] and nan[i][1], "slower in B, and its gradients went NaN: red"
    check = next(j for j, (text, _) in enumerate(nan) if "check:" in text)
    assert check > i and nan[check] == (" " * nan[i - 1][0].index("call") + "check: ok → dq/dk NaN/Inf", True)
    slower = next(j for j, (text, _) in enumerate(nan) if "slower in B" in text)
    assert i < slower < check and nan[slower][0].strip() == "▲ slower in B by more than 10%", "said without colour too"
    assert not nan[-1][1], "the summary is not a site's line"


def test_on_a_pipe_each_site_stays_on_one_line(capsys):
    """Scripts and logs (stdout not a terminal): one line per call site, nothing wrapped."""
    code, out, _ = run(capsys, IDLE, BUSY)
    rows = [line for line in out.splitlines() if line.startswith("training.py:61")]
    assert code == 0 and len(rows) == 2
    assert "qkv[2,4,32,16] fp32 causal grad" in rows[0] and "Flash" in rows[0] and "66.5 → 70.3*" in rows[0]


def test_at_80_columns_a_site_that_ran_other_shapes_says_so_in_two_words_and_fits():
    """A second site whose B ran 8x the length: its row says ``other shapes`` (no ratio), within 80 columns."""
    from sdpa_tui.exports.compare.watch_diff import compare_watch_reports, watch_comparison_lines

    def with_second_site(length: int, scale: float) -> dict:
        doc = json.loads(BEFORE.read_text())
        other = json.loads(json.dumps(doc["calls"][0]))
        other.update(site="advised_context.py:40")
        other["q_shape"][2] = other["kv_shape"][2] = length
        other["host_us"]["median"] *= scale
        doc["calls"].append(other)
        return doc

    comparison = compare_watch_reports(with_second_site(1024, 1.0), with_second_site(8192, 40.0), 0.1, "a", "b")
    lines = [text for text, _ in watch_comparison_lines(comparison, 80)]
    assert all(len(text) <= 80 for text in lines), [t for t in lines if len(t) > 80]
    row = next(text for text in lines if text.split("  ")[0].endswith(":40"))
    assert "other shapes" in row and "x " not in row and "qkv[1,4,8192,64]" in row
