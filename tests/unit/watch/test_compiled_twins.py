"""Compiled SDPA calls beside the eager calls of the same modules (pytorch#177712), and MATH decomposed by the
compiler: the rows, their notes, and a real transformers BERT run eager then compiled on the CPU."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.paths import PROGRAMS, REPO
from support.watching import ENV, watch

from sdpa_tui.core.calls.call_signature import CallSignature
from sdpa_tui.core.calls.watch_report import merge
from sdpa_tui.core.calls.watched_calls import BackwardStats, CallStats, ProcessState
from sdpa_tui.watch.report.call_cells import backend_cell, backward_cell, compiled_lines, kernels_cell, time_cell

pytestmark = pytest.mark.torch_range

BERT = dict(q_shape=(8, 16, 512, 64), kv_shape=(8, 16, 512, 64), dtype="torch.bfloat16", device="cuda:0",
            dropout_p=0.1, scale=0.125, grad=True)


def _rows(compiled: CallStats, eager: CallStats | None = None):
    calls = [compiled] + ([eager] if eager else [])
    return {r.compiled: r for r in merge([ProcessState(pid=1, calls=calls)])}


def _eager(modules=("BertModel:encoder.layer.{0..1}.attention.self",)) -> CallStats:
    """As watched on the H100: no mask, cuDNN, 57.3 µs forward and 107.2 µs backward a call."""
    return CallStats(CallSignature(**BERT), count=40, site="train.py:31", backend="CUDNN_ATTENTION",
                     kernel_us=[57.3] * 5, backward=BackwardStats("CUDNN_ATTENTION", [107.2] * 5),
                     modules=list(modules))


def _compiled(**kw) -> CallStats:
    signature = CallSignature(**BERT, mask="bool", mask_shape=(8, 1, 512, 512))
    return CallStats(signature, count=40, site="transformers/integrations/sdpa_attention.py:182", compiled=True,
                     modules=["encoder.layer.{0..1}.attention.self"], eager_backend="MATH", **kw)


def test_a_compiled_graph_given_a_mask_eager_code_does_not_pass_is_set_beside_its_eager_twin():
    rows = _rows(_compiled(backend="MATH", decomposed=True), _eager())
    row = rows[True]
    assert row.decomposed and backend_cell(row) == "Math (compiled, decomposed)"
    assert time_cell(row) == backward_cell(row) == "in the graph's kernels", "not 'not profiled yet': it never will be"
    assert "decomposed" in kernels_cell(row)
    twin = row.eager_twin
    assert twin is not None and (twin.backend, twin.mask, twin.kernel_us, twin.backward_us) == (
        "CUDNN_ATTENTION", "none", 57.3, 107.2)
    text = "\n".join(compiled_lines(row))
    assert "mask none, cuDNN, 57.3 µs forward + 107.2 µs backward a call" in text
    assert "this graph: mask bool [8, 1, 512, 512], Math, decomposed\n" in text + "\n"
    assert "no SDPA kernel runs" in text and "pytorch#177712" in text
    assert "cost" not in text, "a decomposed graph's attention time is not measured: no difference is claimed"
    assert rows[False].eager_twin is None and compiled_lines(rows[False]) == []
    assert row.report_dict()["eager_twin"]["backend"] == "CUDNN_ATTENTION" and row.report_dict()["decomposed"]


def test_a_compiled_rows_json_gives_its_masks_strides_in_the_graph():
    """The strides the graph's mask had, with the 0 that keeps fused backends out (the BERT graph on the H100 got an
    expanded [8, 1, 512, 512] mask; these strides are MADE-UP of that kind); an eager row's mask has none."""
    row = _rows(_compiled(backend="MATH", decomposed=True, mask_strides=(512, 512, 1, 0)), _eager())
    assert row[True].report_dict()["mask"] == {"kind": "bool", "shape": [8, 1, 512, 512], "strides": [512, 512, 1, 0],
                                           "form": None}
    assert row[False].report_dict()["mask"] == {"kind": "none", "shape": None, "form": None}


def test_a_profiled_graph_backend_gets_the_measured_difference_per_call():
    row = _rows(_compiled(backend="EFFICIENT_ATTENTION", kernel_us=[98.0] * 5), _eager())[True]
    assert not row.decomposed and backend_cell(row) == "Mem-efficient (compiled); eager picks Math"
    assert "the graph's calls cost +40.7 µs forward each against eager's" in compiled_lines(row)


def test_a_graph_not_profiled_yet_is_set_beside_its_twin_as_eager_would_pick_and_says_so():
    row = _rows(_compiled(), _eager())[True]
    assert row.eager_twin is not None and row.eager_twin.backend == "CUDNN_ATTENTION"
    assert "this graph: mask bool [8, 1, 512, 512], Math (as eager picks for its arguments; not profiled yet)" \
        in compiled_lines(row)


def test_no_twin_from_other_modules_or_when_nothing_differs():
    other = _eager(modules=("BertModel:pooler.attention",))
    assert _rows(_compiled(backend="MATH", decomposed=True), other)[True].eager_twin is None
    same = CallStats(CallSignature(**BERT, mask="bool", mask_shape=(8, 1, 512, 512)), count=3, backend="MATH",
                     modules=["BertModel:encoder.layer.0.attention.self"], kernel_us=[1.0])
    row = _rows(_compiled(backend="MATH", decomposed=True), same)[True]
    assert row.eager_twin is None
    assert len(compiled_lines(row)) == 1 and "not separable" in compiled_lines(row)[0]
    assert _rows(_compiled(backend="MATH"), None)[True].eager_twin is None


def test_a_compiled_bert_on_the_cpu_runs_math_decomposed_as_the_profiler_sees_it(tmp_path):
    """transformers' BERT trained eager, then compiled: the profiler finds SDPA ops only in the eager steps (MATH:
    dropout), none under the compiled graph, and watch says the graph's MATH is decomposed, named at a site
    outside sdpa-tui, with both rows' counts exact; after the run the compiled call is measured alone."""
    program = (sys.executable, str(PROGRAMS / "compiled_mask.py"), "cpu", "float32", "3")
    reference = tmp_path / "profile.json"
    plain_out = subprocess.run(list(program), capture_output=True, text=True, timeout=400, cwd=REPO, check=True,
                               env={**ENV, "SDPA_TUI_TEST_PROFILE": str(reference)}).stdout
    ops = json.loads(reference.read_text())
    assert {o["phase"] for o in ops} == {"eager"}, "no SDPA op under the compiled graph"
    assert {o["name"] for o in ops if o["phase"] == "eager"} == {"aten::_scaled_dot_product_attention_math"}
    proc, report = watch(tmp_path, *program, timeout=400, advice=True, flex=False)  # FlexAttention's compile: not read
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == plain_out.strip()
    rows = {c["compiled"]: c for c in report["calls"]}
    assert set(rows) == {False, True}
    compiled, eager = rows[True], rows[False]
    assert compiled["decomposed"] and compiled["backend"] == "MATH" and not eager["decomposed"]
    assert compiled["count"] == eager["count"] == 2 * 3 and compiled["count_exact"]
    assert compiled["site"].startswith("transformers/integrations/sdpa_attention.py:")
    assert "no SDPA kernel runs" in " ".join(proc.stdout.split())
    # the call compiled alone after the run: against the eager calls' own arguments where the graph got another mask
    # than they pass (torch 2.11 on the CPU), else against eager SDPA with the same arguments (torch 2.14)
    cost = compiled["advice"]["compiled_cost"]
    assert cost["clock"] == "host" and cost["against_twin"] == (compiled["eager_twin"] is not None)
    # each clock measured; not their order: host times on a shared CPU (a forward read 1,212 µs against its forward
    # and backward's 568 on a loaded 2-core machine)
    assert cost["compiled_us"] > 0 and cost["eager_us"] > 0 and cost["compiled_fwd_bwd_us"] > 0
    assert "measured alone after the run (host time" in " ".join(proc.stdout.split())
    assert eager["advice"]["compiled_cost"] is None
