"""The sampled output check's reference, computed block by block, equals SDPA in float64 over the whole call."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from sdpa_tui.core.calls.watched_calls import OutputCheck
from sdpa_tui.watch.probe.checks import output_check

pytestmark = pytest.mark.torch_range


def _inputs(heads=4, kv_heads=2, rows=24, keys=40, dim=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(2, heads, rows, dim, generator=gen)
    k = torch.randn(2, kv_heads, keys, dim, generator=gen)
    v = torch.randn(2, kv_heads, keys, dim, generator=gen)
    return q, k, v


MASKS = {
    "none": lambda b, h, r, s: None,
    "bool full": lambda b, h, r, s: torch.rand(b, h, r, s, generator=torch.Generator().manual_seed(1)) > 0.3,
    "padding [b,1,1,s]": lambda b, h, r, s: (torch.arange(s) < s - 5).expand(b, 1, 1, s).clone(),
    "float [r,s]": lambda b, h, r, s: torch.randn(r, s, generator=torch.Generator().manual_seed(2)),
}


@pytest.mark.parametrize("budget,blocks", [
    (16 * 4 * 24 * 40 * 2, (1, 1)),  # the whole call in one block
    (16 * 4 * 24 * 40, (2, 2)),  # a batch element a block
    (16 * 2 * 24 * 40, (4, 4)),  # gqa: a key/value head (and its 2 query heads) a block; else 2 heads a block
    (16 * 2 * 40 * 5, (2 * 2 * 5, 2 * 4 * 3)),  # bands of rows: 5 of a 2-head group, 10 of one head
])
@pytest.mark.parametrize("mask_kind", sorted(MASKS))
@pytest.mark.parametrize("gqa", [True, False])
def test_blocks_give_the_whole_calls_float64_result(monkeypatch, mask_kind, gqa, budget, blocks):
    q, k, v = _inputs(kv_heads=2 if gqa else 4)
    mask = MASKS[mask_kind](2, 4, q.shape[2], k.shape[2])
    monkeypatch.setitem(output_check.BLOCK_BYTES, "cpu", budget)
    assert len(list(output_check.blocks(q, k, gqa))) == blocks[0 if gqa else 1]
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)
    whole = F.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                           attn_mask=mask.double() if mask is not None and mask.is_floating_point()
                                           else mask, enable_gqa=gqa)
    seen = output_check.reference_error(out, q, k, v, mask, False, None, gqa)
    assert seen.error == pytest.approx(float((out.double() - whole).abs().max()), rel=1e-6, abs=1e-12)
    assert seen.size == pytest.approx(float(whole.abs().max()), rel=1e-12)
    assert seen.out_max == pytest.approx(float(out.abs().max()), rel=1e-12)


@pytest.mark.parametrize("rows,keys", [(24, 24), (16, 40), (40, 16)])
def test_is_causal_in_bands_is_torchs_top_left_causal_mask(monkeypatch, rows, keys):
    q, k, v = _inputs(heads=2, kv_heads=2, rows=rows, keys=keys)
    monkeypatch.setitem(output_check.BLOCK_BYTES, "cpu", 16 * keys * 7)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    whole = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    seen = output_check.reference_error(out, q, k, v, None, True, None, False)
    assert seen.masked == 0
    assert seen.error == pytest.approx(float((out.double() - whole).abs().max()), rel=1e-6, abs=1e-12)
    assert seen.error < 1e-5, "a wrongly placed causal band would differ by O(1)"


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_nan_or_inf_in_a_checked_output_is_flagged_from_the_comparison_itself(bad, causal):
    """No separate ``isfinite`` pass over a checked output (one op fewer to load on a GPU): the comparison's maxima
    carry a NaN or Inf, wherever in the call it is (here in the last of four blocks)."""
    q, k, v = _inputs(kv_heads=4)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal).clone()
    out[1, 3, 20, 5] = bad
    check = OutputCheck()
    output_check.check_output(check, out, q, k, v, None, 0.0, causal, None, False)
    assert (check.ok, check.nonfinite, check.samples, check.note) == (False, 1, 1, "")
    assert check.max_abs_error is None, "a non-finite output is not compared"
    q[0, 0, 0, 0] = float("nan")  # the inputs already held one: said so
    check = OutputCheck()
    output_check.check_output(check, out, q, k, v, None, 0.0, causal, None, False)
    assert check.nonfinite == 1 and check.note == "the inputs already held NaN or Inf"


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_an_unchecked_calls_nan_is_still_flagged(monkeypatch, dropout):
    """A call the reference does not check (dropout, or too many scores) is still looked at for NaN or Inf."""
    monkeypatch.setitem(output_check.MAX_SCORES, "cpu", 10)
    q, k, v = _inputs(kv_heads=4)
    out = F.scaled_dot_product_attention(q, k, v).clone()
    check = OutputCheck()
    output_check.check_output(check, out, q, k, v, None, dropout, False, None, False)
    assert check.nonfinite == 0 and check.samples == 0 and check.note.startswith("dropout" if dropout else "not checked")
    out[0, 1, 2, 3] = float("nan")
    check = OutputCheck()
    output_check.check_output(check, out, q, k, v, None, dropout, False, None, False)
    assert (check.ok, check.nonfinite, check.samples, check.note) == (False, 1, 1, "")


def test_a_wrong_output_fails_and_a_call_too_large_is_said():
    q, k, v = _inputs(kv_heads=4)
    out = F.scaled_dot_product_attention(q, k, v).clone()
    out[1, 3, 20, 0] += 0.5
    check = OutputCheck()
    output_check.check_output(check, out, q, k, v, None, 0.0, False, None, False)
    assert check.ok is False and check.samples == 1 and check.max_abs_error == pytest.approx(0.5, rel=1e-4)
    big = torch.zeros(1, 64, 1024, 8)  # finite (torch.empty may hold NaN): the size alone stops the check
    check = OutputCheck()
    output_check.check_output(check, big, big, big, big, None, 0.0, False, None, False)
    assert check.samples == 0 and check.ok is None and check.note.startswith("not checked: the float64 reference would")


@pytest.mark.parametrize("float_mask", [False, True])
def test_rows_with_every_key_masked_are_counted_not_compared(float_mask):
    """Left padding under a causal mask leaves the padded queries no key (transformers' padded batches): float64
    MATH writes 0 there and cuDNN did not (0.19 on the H100); a check must not fail on that, and must say it."""
    q, k, v = _inputs(heads=4, kv_heads=4, rows=16, keys=16)
    keep = torch.ones(2, 1, 16, 16, dtype=torch.bool).tril()
    keep[0, :, :, :5] = False  # sequence 0 padded on the left by 5: its first 5 queries see nothing
    mask = torch.zeros(keep.shape).masked_fill(~keep, float("-inf")) if float_mask else keep
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask).clone()
    out[0, :, :5] = 0.25  # what another backend may write on the rows with no key
    check = OutputCheck()
    output_check.check_output(check, out, q, k, v, mask, 0.0, False, None, False)
    assert check.ok is True and check.samples == 1, check
    assert check.masked_rows == 4 * 5 and check.masked_rows_max == pytest.approx(0.25)
    out[1, 2, 9, 3] += 0.5  # a row that had keys: still compared
    check = OutputCheck()
    output_check.check_output(check, out, q, k, v, mask, 0.0, False, None, False)
    assert check.ok is False and check.max_abs_error == pytest.approx(0.5, rel=1e-4)


def test_masked_rows_are_said_in_the_report_and_the_calls_view():
    from sdpa_tui.core.calls.call_signature import CallSignature
    from sdpa_tui.core.calls.watch_report import build_report
    from sdpa_tui.core.calls.watched_calls import CallStats, ProcessState
    from sdpa_tui.ui.watch.call_rows import check_lines as view_lines
    from sdpa_tui.watch.report.call_cells import check_lines as report_lines

    sig = CallSignature(q_shape=(2, 16, 256, 64), kv_shape=(2, 16, 256, 64), dtype="torch.bfloat16", device="cuda:0",
                        mask="bool", mask_shape=(2, 1, 256, 256), causal=False, dropout_p=0.0, scale=0.125,
                        gqa=False, grad=False)
    check = OutputCheck(samples=1, max_abs_error=1e-3, max_rel_error=2.2e-3, tolerance=3e-2, ok=True,
                        masked_rows=1024, masked_rows_max=0.189)
    stats = CallStats(sig, count=10, site="truth.py:47", backend="CUDNN_ATTENTION", check=check)
    report = build_report(["truth.py"], 0, [ProcessState(pid=1, calls=[stats])], 1.0)
    lines = report_lines(report)
    assert any("1,024 query rows had every key masked" in line and "0.189" in line for line in lines), lines
    assert not any(line.startswith("OUTPUT CHECK FAILED") for line in lines)
    assert lines[-1].startswith("output check: 1 signature(s), 1 output(s)"), lines
    (row,) = report.rows
    assert view_lines(row)[1].strip().startswith("1,024 query rows had every key masked (not compared)")
    assert report.to_dict()["calls"][0]["check"]["masked_rows"] == 1024


@pytest.mark.parametrize("causal", [False, True])
def test_a_training_calls_checks_use_no_boolean_or_extra_reduction_ops_without_a_mask(causal):
    """On a GPU each op new to the process loads its kernels the first time it runs (30 to 120 ms an op on an H200,
    on the program's thread; docs/lab-notes/watch-truth.md): a call with no mask, or torch's causal one, has no row
    that loses every key, so its forward check and gradient comparison need no boolean mask, no dead-row
    bookkeeping, no separate NaN pass and no extra reductions beside the float64 math; and the forward check computes
    its reference with the gradient comparison's own ops, not torch's MATH op, whose safe softmax looks for rows
    with every key masked on every call (``isneginf``, ``all``, ``where`` on the device)."""
    from support.op_kinds import OpKinds

    from sdpa_tui.watch.probe.checks import gradient_reference
    from sdpa_tui.watch.probe.checks.gradient_sentinel import CallTensors

    q, k, v = (t.requires_grad_() for t in _inputs(kv_heads=4))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    grad_out = torch.randn_like(out)
    grads = torch.autograd.grad(out, (q, k, v), grad_out)
    q, k, v, out = (t.detach() for t in (q, k, v, out))
    check, ops = OutputCheck(), OpKinds()
    with ops:
        output_check.check_output(check, out, q, k, v, None, 0.0, causal, None, False)
        errors = gradient_reference.relative_errors(CallTensors(q, k, v, None, 0.0, causal, None, False, grad_out,
                                                                grads))
    assert check.ok is True and set(errors) == {"dq", "dk", "dv"}
    needless = {"isfinite", "eq", "ne", "gt", "all", "any", "bitwise_not", "bitwise_and", "logical_not", "masked_fill",
                "masked_fill_", "isneginf", "where", "maximum", "max", "stack", "cat", "div", "tril", "_safe_softmax",
                "_scaled_dot_product_attention_math"}
    assert not ops.names & needless, sorted(ops.names & needless)


def _dead_rows_bool(b, h, r, s):
    keep = torch.rand(b, h, r, s, generator=torch.Generator().manual_seed(3)) > 0.5
    keep[:, :, ::5] = False  # every fifth query row has no key: torch's MATH writes 0 there
    return keep


@pytest.mark.parametrize("case", ["none", "causal", "causal, more rows than keys", "bool with dead rows",
                                  "float with dead rows", "gqa", "3-d"])
def test_the_reference_from_the_equations_is_torchs_math_op_in_float64(case):
    """The forward check's reference (softmax(scale Q Kᵀ + mask) V in float64, the gradient comparison's own ops) is
    what torch's MATH op computes in float64 on the same inputs, rows with every key masked (0) included."""
    rows, keys = (40, 16) if "more rows" in case else (24, 40)
    q, k, v = _inputs(heads=4, kv_heads=2 if case == "gqa" else 4, rows=rows, keys=keys)
    mask, causal, gqa = None, case.startswith("causal"), case == "gqa"
    if case == "bool with dead rows":
        mask = _dead_rows_bool(2, 4, rows, keys)
    elif case == "float with dead rows":
        mask = torch.zeros(2, 1, rows, keys).masked_fill(~_dead_rows_bool(2, 1, rows, keys), float("-inf"))
    elif case == "3-d":
        q, k, v = q[0], k[0], v[0]
    ours, dead = output_check.reference(q, k, v, mask, causal, 0.3, gqa)
    with sdpa_kernel([SDPBackend.MATH]):
        torchs = F.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                mask.double() if mask is not None and mask.is_floating_point() else mask,
                                                is_causal=causal, scale=0.3, enable_gqa=gqa)
    assert ours.dtype == torch.float64 and ours.shape == torchs.shape
    torch.testing.assert_close(ours, torchs, rtol=1e-12, atol=1e-14)
    if "dead" in case:
        assert (ours[:, :, ::5] == 0).all() and ours.abs().amax() > 0
        assert dead[:, :, ::5].all()
    else:
        assert dead is None
