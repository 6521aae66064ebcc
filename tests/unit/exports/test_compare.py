"""``sdpa-tui compare``: real H100 and H200 reports, and hand-edited copies of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.compare_command import H100, H200, run

from sdpa_tui.core.backends import Backend
from sdpa_tui.exports.compare.report_diff import ReportFileError, compare_reports, load_report


def edited(tmp_path: Path, source: Path, name: str, edit) -> Path:
    document = json.loads(source.read_text(encoding="utf-8"))
    edit(document)
    path = tmp_path / name
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def entry(document: dict, backend: str) -> dict:
    return next(e for e in document["backends"] if e["backend"] == backend)


def test_h100_against_h200_small_shape(capsys):
    """Same kernels on both Hoppers; eager (host-bound) is slower on the H200 box, GPU time is not."""
    code, out, err = run(capsys, H100 / "report-small.json", H200 / "report-small.json", "--json")
    doc = json.loads(out)
    assert code == 1 and err == ""
    assert doc["a"]["device_name"] == "NVIDIA H100 80GB HBM3" and doc["b"]["device_name"] == "NVIDIA H200"
    assert doc["workload_same"] and not doc["dispatch"]["changed"]
    by = {b["backend"]: b for b in doc["backends"]}
    assert not any(b["kernel"]["changed"] or b["eligibility"]["changed"] for b in doc["backends"])
    cudnn = by["CUDNN_ATTENTION"]["clocks"]
    assert cudnn["gpu"]["ratio"] == pytest.approx(9.682073637291237 / 9.633999604445238)
    assert not cudnn["gpu"]["slower"] and cudnn["eager"]["slower"]
    assert {(s["backend"], s["clock"]) for s in doc["slower"]} == {
        ("CUDNN_ATTENTION", "eager"), ("EFFICIENT_ATTENTION", "eager"), ("MATH", "eager")}


def test_threshold_decides_the_exit_code(capsys):
    a, b = H100 / "report-small.json", H200 / "report-small.json"
    assert run(capsys, a, b, "--threshold", "25%")[0] == 0  # the largest ratio is MATH eager, 1.22x
    assert run(capsys, a, b, "--threshold", "20")[0] == 1
    # the 8k causal shape is GPU-bound: within 2 % on every clock, MATH 9 % faster on the H200
    code, out, _ = run(capsys, H100 / "report-8k.json", H200 / "report-8k.json")
    assert code == 0 and "no clock of B is more than 10 % slower than A" in out
    comparison = compare_reports(load_report(H100 / "report-8k.json"), load_report(H200 / "report-8k.json"))
    math = next(c for c in comparison.backends if c.backend is Backend.MATH)
    assert all(c.ratio < 0.92 for c in math.clocks)


def test_kernel_changes_show_in_markdown(capsys):
    """The H200 backward report names forward kernels (it predates backward capture): every kernel differs."""
    code, out, _ = run(capsys, H100 / "report-bwd.json", H200 / "report-bwd.json", "--markdown")
    rows = [line for line in out.splitlines() if line.startswith(("| CUDNN", "| FLASH", "| EFFICIENT", "| MATH"))]
    assert len(rows) == 4 and all("changed: " in row for row in rows)
    assert "changed: flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel → flash_fwd_splitkv_kernel" in out
    assert code == 1


def test_dispatch_and_eligibility_changes(tmp_path, capsys):
    def downgrade(doc):
        doc["dispatch"]["choice"] = "FLASH_ATTENTION"
        cudnn = entry(doc, "CUDNN_ATTENTION")
        cudnn.update(status="not_eligible", reason="cuDNN 8 has no such kernel", main_kernel=None,
                     kernel_us=None, gpu_us=None, eager_us=None,
                     eligibility="not_eligible", eligibility_reason="cuDNN 8 has no such kernel")
        entry(doc, "FLASH_ATTENTION")["gpu_us"] *= 0.5  # faster: no effect on the exit code

    b = edited(tmp_path, H100 / "report-small.json", "b.json", downgrade)
    code, out, _ = run(capsys, H100 / "report-small.json", b, "--json")
    doc = json.loads(out)
    assert code == 0
    assert doc["dispatch"] == {"a": "CUDNN_ATTENTION", "b": "FLASH_ATTENTION", "changed": True,
                               "faster_a": None, "faster_b": None}
    cudnn = doc["backends"][0]
    assert cudnn["eligibility"]["changed"] and cudnn["eligibility"]["b"] == "not eligible"
    assert cudnn["eligibility"]["reason_b"] == "cuDNN 8 has no such kernel"
    assert cudnn["kernel"]["changed"] and cudnn["clocks"]["gpu"]["ratio"] is None
    code, out, _ = run(capsys, H100 / "report-small.json", b, "--markdown")
    assert "dispatch changed: SDPA picks CUDNN_ATTENTION → FLASH_ATTENTION" in out
    assert "eligible → not eligible (cuDNN 8 has no such kernel)" in out


def test_snapshot_schema_2_with_faster_list(tmp_path, capsys):
    def as_snapshot(doc):
        doc.update(schema_version=2, kind="snapshot")
        doc["dispatch"]["faster"] = [{"backend": "EFFICIENT_ATTENTION", "clock": "eager", "ratio": 0.6}]

    snap_dir = tmp_path / "snapshot-20261122-120000"
    snap_dir.mkdir()
    edited(snap_dir, H200 / "report-small.json", "snapshot.json", as_snapshot)
    code, out, _ = run(capsys, H200 / "report-small.json", snap_dir)
    assert code == 0
    assert "in B faster than the pick: EFFICIENT_ATTENTION (eager 0.60x)" in out


@pytest.mark.parametrize("make, words", [
    (lambda d: None, "does not exist"),
    (lambda d: (d / "x.json").write_text("{not json"), "not valid JSON"),
    (lambda d: (d / "x.json").write_text("[1, 2]"), "expected a JSON object"),
    (lambda d: (d / "x.json").write_text(json.dumps({"schema_version": 1, "kind": "sweep",
                                                     "tool": {"name": "sdpa-tui"}})), "'sweep' document"),
    (lambda d: (d / "x.json").write_text(json.dumps({**json.loads((H100 / "report-small.json").read_text()),
                                                     "schema_version": 3})), "schema version 3"),
    (lambda d: (d / "x.json").write_text(json.dumps({"name": "other"})), "not a report or snapshot of sdpa-tui"),
])
def test_a_file_that_is_not_a_report_exits_2(tmp_path, capsys, make, words):
    make(tmp_path)
    code, out, err = run(capsys, H100 / "report-small.json", tmp_path / "x.json")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("sdpa-tui compare: error: ") and words in err


@pytest.mark.parametrize("threshold", ["-5", "ten", "nan", "inf%"])
def test_bad_threshold_exits_2(capsys, threshold):
    code, out, err = run(capsys, H100 / "report-small.json", H200 / "report-small.json", "--threshold", threshold)
    assert code == 2 and out == "" and err.count("\n") == 1 and "--threshold" in err


def test_load_report_reads_a_snapshot_directory_without_snapshot(tmp_path):
    with pytest.raises(ReportFileError, match="has no snapshot.json"):
        load_report(tmp_path)


@pytest.mark.parametrize("output", [(), ("--json",), ("--markdown",)])
def test_reports_of_two_workloads_are_not_comparable_and_exit_3_in_one_line(capsys, output):
    """A ratio of two workloads' times is no regression: a CI gate gets its own code, not 1."""
    from sdpa_tui.commands.exit_codes import EXIT_NOT_COMPARABLE

    code, out, err = run(capsys, H100 / "report-small.json", H100 / "report-8k.json", *output)
    assert code == EXIT_NOT_COMPARABLE == 3 and out == ""
    assert err.count("\n") == 1 and err.startswith("sdpa-tui compare: not comparable: ")
    assert "[2, 8, 512, 64] fp16" in err and "[1, 16, 8192, 128] bf16 causal" in err


def test_at_80_columns_each_backend_is_named_whole_as_reports_table_names_it():
    """A terminal of 80 columns: each backend's row starts with its whole name (``Mem-efficient``, not a cut
    ``EFFICIENT_ATTENTION``), no line is wider than the terminal, and its ratios read whole."""
    import io

    from rich.console import Console

    from sdpa_tui.exports.compare.report_diff_views import comparison_rich

    console = Console(width=80, file=io.StringIO(), color_system=None)
    console.print(comparison_rich(compare_reports(load_report(H200 / "report-8k.json"),
                                                  load_report(H100 / "report-8k.json"))))
    lines = console.file.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines)
    names = [line.split()[0] for line in lines if line.split() and line.split()[0] in {b.label for b in Backend}]
    assert names == [b.label for b in (Backend.CUDNN, Backend.FLASH, Backend.EFFICIENT, Backend.MATH)]
    assert "(1.10x)" in console.file.getvalue() and "(0.99x)" in console.file.getvalue()
