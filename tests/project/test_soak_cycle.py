"""soak.py --cycle: the workloads it visits, the keys between them, and the per-visit RSS table
that tells a bounded first-use cost (visit 2+ ≈ visit 1) from growth (a rising line)."""

from __future__ import annotations

import sys

import pytest
from support.paths import BENCHMARKS

sys.path.insert(0, str(BENCHMARKS / "soak"))

from soak_cycle import Stop, format_table, keys_between, later_minus_first, parse_cycle, per_visit  # noqa: E402


def row(t: float, stop: str | None, visit: int | None, rss: float | None, pid: int = 532) -> dict:
    """A sample row as soak.py writes it (the fields per_visit reads, plus a few it must ignore)."""
    out = {"elapsed_s": t, "engine_pid": pid, "engine_rss_mib": rss, "ui_rss_mib": 210.0, "history_rows": 40}
    if stop is not None:
        out.update(cycle_stop=stop, visit=visit)
    return out


def cycle_rows(rss: dict[str, list[float]], pid_of_visit=lambda stop, visit: 532) -> list[dict]:
    """Two samples a visit (mid and end), stops in turn, visits in rounds, as the soak takes them;
    the mid-visit sample reads 40 MiB below the end (the kernels are still loading)."""
    rows, t = [], 0.0
    for visit in range(1, len(next(iter(rss.values()))) + 1):
        for stop, values in rss.items():
            end = values[visit - 1]
            rows.append(row(t, stop, visit, end - 40.0, pid_of_visit(stop, visit)))
            rows.append(row(t + 10.0, stop, visit, end, pid_of_visit(stop, visit)))
            t += 20.0
    return rows


def test_first_use_cost_reads_as_flat_visits():
    # the step of the 2026-11-23 H100 soak (fp16 -> bf16: +117 MiB), paid once
    rows = cycle_rows({"fp16 seq 128": [1149.2, 1149.3, 1149.3], "bf16 seq 128": [1266.6, 1266.6, 1266.7]})
    table = per_visit(rows)
    assert list(table) == ["fp16 seq 128", "bf16 seq 128"]
    assert [v["rss_end_mib"] for v in table["bf16 seq 128"]] == [1266.6, 1266.6, 1266.7]
    assert [v["visit"] for v in table["fp16 seq 128"]] == [1, 2, 3]
    assert later_minus_first(table["fp16 seq 128"]) == pytest.approx(0.1)
    assert later_minus_first(table["bf16 seq 128"]) == pytest.approx(0.1)


def test_growth_reads_as_a_rising_line():
    rows = cycle_rows({"fp16 seq 128": [1149.0, 1190.0, 1231.0], "bf16 seq 128": [1266.0, 1307.0, 1348.0]})
    table = per_visit(rows)
    assert [v["rss_end_mib"] for v in table["fp16 seq 128"]] == [1149.0, 1190.0, 1231.0]
    assert later_minus_first(table["bf16 seq 128"]) == pytest.approx(82.0)
    printed = format_table(table).splitlines()
    assert printed[0].split() == ["workload", "visit", "1", "visit", "2", "visit", "3", "last", "-", "1st"]
    assert printed[2].split() == ["bf16", "seq", "128", "1,266.0", "1,307.0", "1,348.0", "+82.0"]


def test_a_visit_reads_its_last_sample_and_keeps_its_peak():
    rows = [row(0.0, "fp32 seq 256", 1, 900.0), row(5.0, "fp32 seq 256", 1, 1010.0), row(10.0, "fp32 seq 256", 1, 1000.0)]
    (visit,) = per_visit(rows)["fp32 seq 256"]
    assert visit == {"visit": 1, "first_s": 0.0, "last_s": 10.0, "rss_end_mib": 1000.0, "rss_max_mib": 1010.0,
                     "engine_pids": [532]}


def test_rows_without_a_stop_or_an_engine_reading_are_left_out():
    rows = [row(0.0, None, None, 800.0), row(5.0, "fp16 seq 64", 1, None, pid=None), row(10.0, "fp16 seq 64", 1, 700.0)]
    assert [v["rss_end_mib"] for v in per_visit(rows)["fp16 seq 64"]] == [700.0]
    assert per_visit([row(0.0, None, None, 800.0)]) == {}


def test_visits_of_another_engine_do_not_compare():
    # the engine was replaced before visit 3: its RSS starts from a fresh process's
    rows = cycle_rows({"fp16 seq 128": [1149.0, 1150.0, 480.0], "bf16 seq 128": [1266.0, 1266.0, 1100.0]},
                      pid_of_visit=lambda stop, visit: 532 if visit < 3 else 796)
    table = per_visit(rows)
    assert table["fp16 seq 128"][2]["engine_pids"] == [796]
    assert later_minus_first(table["fp16 seq 128"]) is None
    assert later_minus_first(table["fp16 seq 128"][:2]) == pytest.approx(1.0)
    line = format_table(table).splitlines()[1].split()
    assert line[3:] == ["1,149.0", "1,150.0", "480.0*", "n/a"]


def test_a_single_visit_has_no_difference():
    table = per_visit([row(0.0, "fp16 seq 128", 1, 1149.0)])
    assert later_minus_first(table["fp16 seq 128"]) is None


def test_the_cycle_is_each_dtype_with_each_length():
    assert parse_cycle("fp16,bf16,fp32", "128,256") == [
        Stop("fp16", 128), Stop("fp16", 256), Stop("bf16", 128), Stop("bf16", 256), Stop("fp32", 128), Stop("fp32", 256)]
    assert parse_cycle(" bf16 ", "512") == [Stop("bf16", 512)]


@pytest.mark.parametrize("dtypes, seqs, words", [
    ("fp16,fp8", "128", "dtypes"),
    ("", "128", "dtypes"),
    ("fp16", "128,x", "whole numbers"),
    ("fp16", "0", "positive"),
    ("fp16,fp16", "128", "repeat"),
    ("fp16", "128,192", "power of two"),
])
def test_a_bad_cycle_is_one_clear_line(dtypes, seqs, words):
    with pytest.raises(ValueError, match=words) as caught:
        parse_cycle(dtypes, seqs)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("here, there, keys", [
    (Stop("fp16", 128), Stop("fp16", 256), ["plus"]),
    (Stop("fp16", 256), Stop("bf16", 128), ["d", "minus"]),
    (Stop("fp32", 256), Stop("fp16", 64), ["d", "minus", "minus"]),  # fp32 -> fp16 is one turn
    (Stop("bf16", 128), Stop("fp16", 128), ["d", "d"]),
    (Stop("fp16", 128), Stop("fp16", 128), []),
])
def test_the_keys_between_two_stops(here, there, keys):
    assert keys_between(here, there) == keys


def test_the_soak_cycle_turns_the_engine_allowance_off(capsys):
    import soak

    assert soak.parse_args(["--cycle", "fp16,bf16"]).engine_memory_mib == 0.0
    assert soak.parse_args(["--cycle", "fp16", "--engine-memory-mib", "64"]).engine_memory_mib == 64.0
    assert soak.parse_args([]).engine_memory_mib == soak.ENGINE_MEMORY_MIB
    assert soak.parse_args(["--cycle", "fp16", "--seq", "64"]).cycle_seqs == "64"
    with pytest.raises(SystemExit) as exited:
        soak.parse_args(["--cycle", "fp16", "--cycle-seqs", "100,128"])
    assert exited.value.code == 2
    assert "power of two" in capsys.readouterr().err
