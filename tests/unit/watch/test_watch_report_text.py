"""``watch --report``'s text and Markdown (``watch/report/report_text.py``) from reports built of process states: a
line per signature that fits 100 columns, rows that wrap only their call at 80, no column that says nothing on this
device, every call site with its count, and the calls watch could not inspect."""

from __future__ import annotations

import re

import pytest

from sdpa_tui.core.calls.call_signature import CallSignature
from sdpa_tui.core.calls.watch_report import build_report
from sdpa_tui.core.calls.watched_calls import (
    CPU_KERNELS_NOTE,
    BackwardStats,
    CallStats,
    OutputCheck,
    ProcessState,
    UninspectedCalls,
)
from sdpa_tui.watch.report.report_text import report_markdown, report_text

LLAMA = CallSignature((2, 8, 16, 8), (2, 8, 16, 8), "torch.float32", "cpu", mask="bool", mask_shape=(2, 1, 16, 16),
                      scale=0.353553)
GQA = CallSignature((2, 8, 16, 32), (2, 2, 16, 32), "torch.float32", "cpu", causal=True, gqa=True)
WHY_NOT = {"CUDNN_ATTENTION": "cuDNN has no CPU implementation (on the CPU, SDPA has a flash kernel and MATH)",
           "MATH": "eligible; on the CPU SDPA takes FLASH_ATTENTION whenever it can (no priority order)"}


def cpu_report(*calls: CallStats, uninspected=()):
    state = ProcessState(1, list(calls), kernels_note=CPU_KERNELS_NOTE, uninspected=list(uninspected))
    return build_report(["python3", "prog.py"], 0, [ProcessState.from_dict(state.to_dict())], 6.0)


def two_site_report():
    llama = CallStats(LLAMA, count=16, site="tests/prog.py:22", backend="FLASH_ATTENTION", why_not=dict(WHY_NOT),
                      host_us=[86.9, 90.1, 85.0], first_call_us=582.9, modules=["LlamaForCausalLM:model.layers.0.attn"],
                      sites={"tests/prog.py:22": 6, "tests/prog.py:24": 10},
                      check=OutputCheck(samples=1, max_rel_error=7.6e-8, tolerance=2e-3, ok=True))
    gqa = CallStats(GQA, count=4, site="tests/prog.py:29", backend="FLASH_ATTENTION", why_not=dict(WHY_NOT),
                    host_us=[25.1, 25.3], sites={"tests/prog.py:29": 4})
    mha = UninspectedCalls("nn.MultiheadAttention's fast path (eval, autograd off: torch._native_multi_head_attention)",
                           7, {"tests/prog.py:26": 7}, ["MultiheadAttention"])
    return cpu_report(llama, gqa, uninspected=[mha])


def table(text: str) -> list[str]:
    """The table's lines: from its heading to the first blank line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#  site"))
    return lines[start: lines.index("", start)]


def test_at_100_columns_each_signature_is_one_line_with_its_numbers_and_no_empty_column():
    text = report_text(two_site_report(), 100)
    assert max(len(line) for line in text.splitlines()) <= 100
    heading, *rows = table(text)
    assert heading.split() == ["#", "site", "call", "backend", "count", "fwd", "time", "share"]
    assert len(rows) == 2, "one line per signature"
    assert re.fullmatch(r"1\s+prog\.py:24,22\s+qkv\[2,8,16,8\] fp32 bool mask\s+Flash\s+16\s+86\.9 µs\s+93%", rows[0])
    assert re.fullmatch(r"2\s+prog\.py:29\s+q\[2,8,16,32\] kv\[2,2,16,32\] fp32 causal gqa\s+Flash\s+4\s+25\.2 µs\s+7%",
                        rows[1])
    assert "GPU share" not in text and "bwd" not in text and " — " not in text
    assert text.count("no GPU kernels on the CPU") == 1, "said once, not per row"
    assert text.count("cuDNN has no CPU implementation") == 1, "a reason every row gives is said once"


def test_at_80_columns_rows_wrap_their_call_never_a_number():
    text = report_text(two_site_report(), 80)
    assert max(len(line) for line in text.splitlines()) <= 80
    heading, *lines = table(text)
    firsts = [line for line in lines if re.match(r"\d ", line)]
    assert len(firsts) == 2 and len(lines) > 2, "the second row's call wraps under its column"
    assert [line.split()[-5:] for line in firsts] == [["Flash", "16", "86.9", "µs", "93%"],
                                                      ["Flash", "4", "25.2", "µs", "7%"]], "numbers stay whole"
    call = heading.index("call")
    continued = [line for line in lines if not re.match(r"\d ", line)]
    assert all(line[:call].strip() == "" for line in continued), "only the call column continues"


def test_a_row_with_two_call_sites_names_both_with_their_counts():
    text = report_text(two_site_report(), 100)
    assert "sites      tests/prog.py:24 (10 calls), :22 (6 calls)" in text
    report = two_site_report()
    assert report.to_dict()["calls"][0]["sites"] == [{"site": "tests/prog.py:24", "count": 10},
                                                     {"site": "tests/prog.py:22", "count": 6}]
    assert report.to_dict()["calls"][0]["sites_sampled"] is False


def test_sampled_site_counts_are_scaled_to_the_count_and_said_estimated():
    # 256 calls noted one by one, then every 64th for 64: 300 calls in all
    stats = CallStats(GQA, count=300, site="a.py:5", backend="FLASH_ATTENTION", host_us=[25.0],
                      sites={"a.py:5": 200, "a.py:9": 56 + 64}, sites_sampled=True)
    report = cpu_report(stats)
    (row,) = report.rows
    assert row.sites == (("a.py:5", 188), ("a.py:9", 112)) and row.sites_sampled  # 300 × 200/320, 300 × 120/320
    assert "a.py:5 (~188 calls), :9 (~112 calls); calls per site estimated from sampled calls" in \
        report_text(report, 100)


def test_records_from_before_sites_were_counted_put_every_call_at_their_site():
    old = CallStats(GQA, count=12, site="a.py:5", backend="FLASH_ATTENTION").to_dict()
    del old["sites"], old["sites_sampled"]
    state = {**ProcessState(1).to_dict(), "calls": [old]}
    del state["uninspected"]
    read = ProcessState.from_dict(state)
    report = build_report(["a.py"], 0, [read], 1.0)
    assert report.rows[0].sites == (("a.py:5", 12),) and report.uninspected == []


def test_calls_watch_could_not_inspect_are_said_with_their_count_and_site():
    text = report_text(two_site_report(), 100)
    said = " ".join(text.split())
    assert ("NOT INSPECTED: 7 calls of nn.MultiheadAttention's fast path (eval, autograd off: "
            "torch._native_multi_head_attention) at tests/prog.py:26 (7 calls) in MultiheadAttention") in said
    assert "they are in no row above" in said
    two = cpu_report(uninspected=[UninspectedCalls("p", 3, {"a.py:1": 3}), UninspectedCalls("p", 4, {"a.py:1": 4})])
    assert [(u.count, u.sites) for u in two.uninspected] == [(7, {"a.py:1": 7})], "summed over processes"


def test_a_bwd_column_comes_with_calls_that_record_autograd():
    grad = CallSignature((2, 8, 128, 64), (2, 8, 128, 64), "torch.bfloat16", "cuda:0", causal=True, grad=True)
    stats = CallStats(grad, count=40, site="train.py:57", backend="FLASH_ATTENTION", kernel_us=[11.0, 12.0],
                      kernels=["flash_fwd_kernel"], backward=BackwardStats("FLASH_ATTENTION", [30.0], []))
    text = report_text(build_report(["train.py"], 0, [ProcessState(1, [stats])], 1.0), 100)
    heading, row = table(text)
    assert "bwd time" in heading and row.split()[-5:] == ["11.5", "µs", "30.0", "µs", "100%"]
    assert "no GPU kernels" not in text and "the GPU's kernels (CUPTI)" in text


def test_on_the_cpu_a_training_call_says_its_backward_is_not_timed_and_no_empty_bwd_column():
    grad = CallSignature((2, 8, 16, 8), (2, 2, 16, 8), "torch.float32", "cpu", causal=True, gqa=True, grad=True)
    stats = CallStats(grad, count=6, site="tests/prog.py:26", backend="FLASH_ATTENTION", why_not=dict(WHY_NOT),
                      host_us=[75.3, 80.1])
    text = report_text(cpu_report(stats), 100)
    heading, row = table(text)
    assert "bwd" not in heading and "–" not in row, "a column of dashes says nothing"
    assert "(no GPU kernels on the CPU; the backward is timed by its GPU kernels alone)" in " ".join(text.split())


@pytest.mark.parametrize("width", [80, 100, 120])
def test_no_line_is_wider_than_the_terminal(width):
    report = two_site_report()
    report.notes.append("x" * 300)
    assert max(len(line) for line in report_text(report, width).splitlines()) <= width


def test_markdown_has_the_table_and_each_rows_details():
    md = report_markdown(two_site_report())
    assert "| # | site | call | backend | count | fwd time | share |" in md
    assert "| 1 | prog.py:24,22 | qkv[2,8,16,8] fp32 bool mask | Flash | 16 | 86.9 µs | 93% |" in md
    assert "- **sites** tests/prog.py:24 (10 calls), :22 (6 calls)" in md
    assert "NOT INSPECTED: 7 calls" in md


def test_calls_beyond_the_noted_sites_are_not_counted_at_them():
    """A fast path called 731 times had its first 256 calls' sites noted: "at x.py:41 (256 calls)" read as a miscount."""
    mha = UninspectedCalls("nn.MultiheadAttention's fast path", 731, {"prog.py:41": 256}, ["mha"])
    text = " ".join(report_text(cpu_report(uninspected=[mha]), 100).split())
    assert "NOT INSPECTED: 731 calls of nn.MultiheadAttention's fast path at prog.py:41 (where its first 256 calls " \
           "came from) in mha" in text
