"""Packed attention for padded calls (``core/calls/packed_alternative.py``, ``engine/costs/packed_cost.py``): the lengths
read from a call's mask, the code (pack, ``varlen_attn``, unpack) run against the call on its real rows, the advice
that offers it on the clock it has, the lab's ``--lengths``/``--padding``, and the one line where torch cannot run it
(the CPU; a torch before 2.10)."""

from __future__ import annotations

import sys
import weakref
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
from support.lab_sessions import lab

from sdpa_tui.cli import parse
from sdpa_tui.commands.exit_codes import EXIT_USAGE
from sdpa_tui.commands.report import packed_alternatives
from sdpa_tui.core.backends import Backend
from sdpa_tui.core.calls.advice import advise
from sdpa_tui.core.calls.call_signature import CallSignature
from sdpa_tui.core.calls.flex_alternative import FlexCost
from sdpa_tui.core.calls.mask_forms import CAUSAL, CAUSAL_KEY_PADDING, KEY_PADDING
from sdpa_tui.core.calls.packed_alternative import (
    KEYWORDS_SINCE,
    NEEDS_CUDA,
    NESTED,
    VARLEN,
    PackedCost,
    PackedSpec,
    code_parts,
    installed_torch,
    lab_spec,
    packed_alternative,
    packed_spec,
    refusal,
    varlen_code,
)
from sdpa_tui.core.calls.watch_report import backend_label
from sdpa_tui.core.calls.watched_calls import CallStats
from sdpa_tui.core.padded_lengths import (
    from_histogram,
    histogram,
    lengths_for_padding,
    padding_of,
    parse_lengths,
    parse_padding,
    typical,
)
from sdpa_tui.core.protocol.records import Sample
from sdpa_tui.core.workload import Workload, WorkloadError
from sdpa_tui.engine.costs import packed_cost
from sdpa_tui.engine.costs.call_match import DiffersFromTheCall
from sdpa_tui.watch.probe.explain import padding

pytestmark = pytest.mark.torch_range

B, H, S, D = 4, 4, 48, 16
LENGTHS = (48, 40, 17, 3)


def signature(form: str = KEY_PADDING, kind: str = "bool", gqa: bool = False, grad: bool = False,
              dropout_p: float = 0.0, kv: int = S) -> CallSignature:
    rows = S if form == CAUSAL_KEY_PADDING else 1
    return CallSignature((B, H, S, D), (B, H // 2 if gqa else H, kv, D), "torch.float32", "cpu", kind,
                         (B, 1, rows, kv), dropout_p=dropout_p, gqa=gqa, grad=grad)


def workload(gqa: bool = False, direction: str = "fwd") -> Workload:
    return Workload(batch=B, heads=H, kv_heads=H // 2 if gqa else H, seq=S, kv_seq=S, head_dim=D, dtype="fp32",
                    mask="padding", direction=direction)


def reference_varlen(q, k, v, cu_seq_q, cu_seq_k, max_q, max_k, *, window_size=(-1, -1), enable_gqa=False,
                     scale=None):
    """A CPU stand-in for ``varlen_attn`` (CUDA only): SDPA on each packed sequence alone."""
    bounds = cu_seq_q.tolist()
    assert cu_seq_q.dtype == torch.int32 and max_q == max(b - a for a, b in zip(bounds, bounds[1:]))
    out = []
    for a, b in zip(bounds, bounds[1:]):
        one = [t[a:b].transpose(0, 1)[None] for t in (q, k, v)]
        out.append(F.scaled_dot_product_attention(*one, is_causal=window_size == (-1, 0), enable_gqa=enable_gqa,
                                                  scale=scale)[0].transpose(0, 1))
    return torch.cat(out)


@pytest.fixture
def varlen_on_the_cpu(monkeypatch):
    from torch.nn.attention import varlen

    monkeypatch.setattr(varlen, "varlen_attn", reference_varlen)


# -- the lengths --------------------------------------------------------------------------------------------------
def test_lengths_for_a_padding_fraction_are_deterministic_within_the_padded_length_and_pad_that_share():
    for batch, padded, share in ((8, 1024, 0.25), (8, 1024, 0.6), (3, 100, 0.0), (16, 512, 0.9), (2, 64, 0.4)):
        lengths = lengths_for_padding(batch, padded, share)
        assert lengths == lengths_for_padding(batch, padded, share) and len(lengths) == batch
        assert all(1 <= n <= padded for n in lengths) and max(lengths) == padded
        assert abs(padding_of(lengths, padded) - share) <= 1 / padded
    assert lengths_for_padding(1, 100, 0.3) == (70,)
    assert lengths_for_padding(2, 64, 0.5) == (32, 32), "too much padding for one full-length sequence: all alike"


@pytest.mark.parametrize("text", ["", "5,,6", "5,x", "0,4", "-3"])
def test_bad_lengths_are_refused_with_what_is_wrong(text):
    with pytest.raises(ValueError, match="--lengths"):
        parse_lengths(text)


@pytest.mark.parametrize("text", ["x", "-0.1", "0.96", "nan", "1"])
def test_a_padding_outside_0_to_0_95_is_refused(text):
    with pytest.raises(ValueError, match="--padding"):
        parse_padding(text)


def test_report_lengths_give_the_batch_and_the_padded_length_and_padding_draws_them():
    _, w, _ = parse(["report", "--lengths", "512,384,200"])
    assert (w.batch, w.seq, w.kv_seq, w.mask, w.lengths) == (3, 512, 512, "padding", (512, 384, 200))
    assert "lengths 512,384,200 (padding 29%)" in w.describe()
    _, w, _ = parse(["report", "--lengths", "300,200", "--seq", "1024"])
    assert (w.seq, w.lengths) == (1024, (300, 200))
    _, w, _ = parse(["report", "--padding", "0.25", "--batch", "8", "--seq", "1024"])
    assert w.lengths == lengths_for_padding(8, 1024, 0.25) and w.mask == "padding"


@pytest.mark.parametrize("argv", [
    ["report", "--lengths", "5,x"], ["report", "--padding", "1.5"], ["report", "--lengths", "600", "--seq", "512"],
    ["report", "--lengths", "5,6", "--batch", "3"], ["report", "--lengths", "5,6", "--padding", "0.2"],
    ["report", "--lengths", "4,5", "--causal"], ["sweep", "--padding", "0,2"],
])
def test_bad_padded_input_exits_2_with_one_line(argv, capsys):
    if argv[0] == "sweep":
        args, w, backends = parse([*argv, "--device", "cpu"])
        from sdpa_tui.commands.sweep import padding_plan

        with pytest.raises(ValueError, match="--padding"):
            padding_plan(args, w)
        return
    with pytest.raises(SystemExit) as exit_:
        parse(argv)
    assert exit_.value.code == EXIT_USAGE
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_workload_with_lengths_needs_the_padding_mask_one_per_sequence_and_self_attention():
    for changes in ({"mask": "none"}, {"lengths": (4, 4, 4)}, {"kv_seq": 64}, {"lengths": (49, 4, 4, 4)}):
        with pytest.raises(WorkloadError):
            Workload(**{**workload().to_dict(), "lengths": LENGTHS, **changes})
    assert Workload.from_dict({**workload().to_dict(), "lengths": list(LENGTHS)}).lengths == LENGTHS


# -- the lengths read from a call's mask ----------------------------------------------------------------------------
def kept(lengths=LENGTHS, left: bool = False) -> torch.Tensor:
    keep = torch.arange(S)[None, :] < torch.tensor(lengths)[:, None]
    return keep.flip(-1) if left else keep


@pytest.mark.parametrize("left", [False, True])
@pytest.mark.parametrize("form", [KEY_PADDING, CAUSAL_KEY_PADDING])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_the_lengths_are_read_from_a_key_padding_mask_right_or_left_causal_or_not(left, form, kind):
    mask = kept(left=left)[:, None, None, :].expand(B, 1, S, S)
    if form == CAUSAL_KEY_PADDING:
        mask = mask & torch.ones(S, S, dtype=torch.bool).tril()
        if left:  # transformers' left padding: the padded rows keep no key; the last row keeps every real one
            pass
    if kind == "float":
        mask = torch.zeros(mask.shape).masked_fill(~mask, torch.finfo(torch.float32).min)
    stats = CallStats(signature(form, kind), mask_form=form)
    assert padding.due(1, stats)
    padding.read_lengths(stats, mask)
    assert stats.lengths == [histogram(LENGTHS)] and from_histogram(stats.lengths[0]) == LENGTHS
    assert CallStats.from_dict(stats.to_dict()).lengths == stats.lengths, "through the probe's JSON"


def test_lengths_are_read_on_sampled_calls_only_a_few_times_and_only_for_padded_masks():
    stats = CallStats(signature(), mask_form=KEY_PADDING)
    assert [n for n in range(1, 5000) if padding.due(n, stats)] == [1, 1024, 2048, 3072, 4096]
    stats.lengths = [histogram(LENGTHS)] * padding.MAX_BATCHES
    assert not padding.due(1024 * 9, stats)
    assert not padding.due(1, CallStats(signature(), mask_form=CAUSAL))
    two_dims = CallStats(signature(), mask_form=KEY_PADDING)
    padding.read_lengths(two_dims, kept()[0][None, :].expand(S, S))
    assert two_dims.lengths == [], "a mask that broadcasts over the batch has no per-sequence lengths"


def test_the_lab_replays_the_batch_of_median_padding():
    batches = [histogram((48, 48, 48, 48)), histogram(LENGTHS), histogram((48, 1, 1, 1))]
    assert typical(batches, S) == histogram(LENGTHS) and typical([], S) is None


# -- which calls ----------------------------------------------------------------------------------------------------
def test_packing_is_offered_for_padded_self_attention_and_says_why_not_elsewhere():
    spec = packed_spec(workload(), signature(), KEY_PADDING, LENGTHS)
    assert isinstance(spec, PackedSpec) and spec.workload.lengths == LENGTHS
    assert PackedSpec.from_dict(spec.to_dict()) == spec
    assert packed_spec(workload(), signature(), CAUSAL, LENGTHS) is None, "not padded: nothing to say"
    cross = Workload(batch=B, heads=H, kv_heads=H, seq=S, kv_seq=64, head_dim=D, dtype="fp32", mask="padding")
    assert "differ in length" in packed_spec(cross, signature(kv=64), KEY_PADDING, LENGTHS)
    assert "dropout" in packed_spec(workload(), signature(dropout_p=0.1), KEY_PADDING, LENGTHS)
    assert "no lengths" in packed_spec(workload(), signature(), KEY_PADDING, ())
    flat = CallSignature((B, H, S, D), (B, H, S, D), "torch.float32", "cpu", "bool", (S, S))
    assert "dimensions" in packed_spec(workload(), flat, KEY_PADDING, LENGTHS)


# -- the code, run against the call ----------------------------------------------------------------------------------
@pytest.mark.parametrize("form", [KEY_PADDING, CAUSAL_KEY_PADDING])
@pytest.mark.parametrize("kind", ["bool", "float"])
@pytest.mark.parametrize("gqa", [False, True])
def test_the_varlen_code_packs_and_unpacks_to_the_calls_output_on_its_real_rows(varlen_on_the_cpu, form, kind, gqa):
    spec = packed_spec(workload(gqa, "fwd+bwd"), signature(form, kind, gqa, grad=True), form, LENGTHS)
    code = dict(spec.codes)[VARLEN]
    assert code.splitlines()[0] == "from torch.nn.attention.varlen import varlen_attn"
    assert ("window_size=(-1, 0)" in code) == (form == CAUSAL_KEY_PADDING)
    # GQA as the installed torch takes it: a keyword from 2.12, the key/value heads repeated before (CI runs the
    # torch floor too)
    keyword = installed_torch() >= KEYWORDS_SINCE
    assert ("enable_gqa=True" in code) == (gqa and keyword) and ("repeat_interleave" in code) == (gqa and not keyword)
    cost = packed_cost.measure_code(spec, code)
    assert cost.matched is not None and cost.matched < 1e-5 and cost.error < 1e-5
    assert len(cost.eager_us) == 15 and cost.gpu_us == () and cost.kernel_us is None


@pytest.mark.parametrize("name", [VARLEN, NESTED])
@pytest.mark.parametrize("gqa", [False, True])
def test_every_call_waits_for_nothing_the_mask_is_read_once_per_batch(name, gqa):
    """The host waits (the real tokens' indices, the longest length) are in the once-per-batch part, so a CUDA graph
    can capture the every-call part and a model's layers on one mask pay them once."""
    code = dict(packed_spec(workload(gqa), signature(CAUSAL_KEY_PADDING, gqa=gqa), CAUSAL_KEY_PADDING,
                            LENGTHS).codes)[name]
    parts = code_parts(code)
    assert "nonzero" in parts.per_batch and "int(lengths.max())" in parts.per_batch
    assert not any(wait in parts.per_call for wait in ("nonzero", "int(", ".item()", ".tolist()", "attn_mask"))
    assert "packed = " in parts.per_call and parts.per_call.splitlines()[-1].startswith("out = ")
    assert parts.imports == ("from torch.nn.attention.varlen import varlen_attn" if name == VARLEN else "")
    with pytest.raises(ValueError, match="header"):
        code_parts(code.replace("# every call", "# each call"))


def test_the_once_per_batch_part_runs_once_and_is_timed_apart(varlen_on_the_cpu, monkeypatch):
    spec = packed_spec(workload(), signature(), KEY_PADDING, LENGTHS)
    q, k, v = (torch.randn(B, H, S, D) for _ in range(3))
    attn_mask, _ = packed_cost.passed_mask(spec, kept(), torch.float32)
    counted = {"nonzero": 0}
    nonzero = torch.Tensor.nonzero

    def counting(self, *args, **kwargs):
        counted["nonzero"] += 1
        return nonzero(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "nonzero", counting)
    out = packed_cost.run_code(dict(spec.codes)[VARLEN], {"q": q, "k": k, "v": v, "attn_mask": attn_mask})
    first = out()
    for _ in range(4):
        torch.testing.assert_close(out(), first)
    assert counted["nonzero"] == 1, "five calls on one mask read its real tokens once"
    from torch.nn.attention import varlen

    packed = []  # what varlen_attn gave each call, weakly

    def recorded(*args, **kwargs):
        out = reference_varlen(*args, **kwargs)
        packed.append(weakref.ref(out))
        return out

    monkeypatch.setattr(varlen, "varlen_attn", recorded)
    trained = packed_spec(workload(direction="fwd+bwd"), signature(grad=True), KEY_PADDING, LENGTHS)
    leaf = q.detach().requires_grad_()
    call = packed_cost.run_code(dict(trained.codes)[VARLEN], {"q": leaf, "k": k, "v": v, "attn_mask": attn_mask})
    call().sum().backward()
    assert packed and packed[-1]() is None, \
        "nothing of a call outlives its output (its autograd graph would live into a CUDA graph's capture)"
    monkeypatch.setattr(torch.Tensor, "nonzero", nonzero)
    cost = packed_cost.measure_code(spec, dict(spec.codes)[VARLEN])
    assert isinstance(cost, PackedCost) and len(cost.batch_eager_us) == 15 and cost.batch_us > 0
    assert cost.batch_kernel_us is None, "no kernels on the CPU"
    assert PackedCost.from_dict(cost.to_dict()) == cost


def test_the_call_is_measured_with_its_queries_keys_and_values_laid_out_as_the_program_had_them(varlen_on_the_cpu):
    """transformers passes queries that are a [batch, length, heads, dim] tensor transposed and keys and values
    repeated into contiguous ones: the probe reads that at the first call, and the packed code runs on inputs laid out
    the same (gathering from the first is a view, from the others a copy first)."""
    from sdpa_tui.watch.probe.explain.choice import memory_layout

    q = torch.randn(B, S, H, D).transpose(1, 2)
    k = torch.randn(B, H, S, D)
    assert [memory_layout(t) for t in (q, k, k.transpose(2, 3), k[0])] == ["blhd", "bhld", "", ""]
    t = torch.randn(B, H, S, D, requires_grad=True)
    moved = packed_cost.laid_out(t, "blhd")
    assert memory_layout(moved) == "blhd" and torch.equal(moved, t) and moved.is_leaf and moved.requires_grad
    assert packed_cost.laid_out(t, "bhld") is t
    spec = packed_spec(workload(), signature(grad=True), KEY_PADDING, LENGTHS, layouts=("blhd", "bhld", "bhld"))
    assert PackedSpec.from_dict(spec.to_dict()).layouts == ("blhd", "bhld", "bhld")
    spec = packed_spec(workload(direction="fwd+bwd"), signature(grad=True), KEY_PADDING, LENGTHS,
                       layouts=("blhd", "bhld", "bhld"))
    cost = packed_cost.measure_code(spec, dict(spec.codes)[VARLEN])
    assert cost.matched < 1e-5 and cost.error < 1e-5


def test_the_unpacked_output_has_the_calls_shape_and_zeros_at_the_padded_rows(varlen_on_the_cpu):
    spec = packed_spec(workload(), signature(), KEY_PADDING, LENGTHS)
    q, k, v = (torch.randn(B, H, S, D) for _ in range(3))
    attn_mask, _ = packed_cost.passed_mask(spec, kept(), torch.float32)
    out = packed_cost.run_code(dict(spec.codes)[VARLEN], {"q": q, "k": k, "v": v, "attn_mask": attn_mask})()
    assert out.shape == (B, H, S, D)
    assert out.transpose(1, 2)[~kept()].abs().max() == 0
    own = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
    torch.testing.assert_close(out.transpose(1, 2)[kept()], own.transpose(1, 2)[kept()])


def test_code_whose_unpacking_is_wrong_is_not_offered(varlen_on_the_cpu):
    spec = packed_spec(workload(), signature(), KEY_PADDING, LENGTHS)
    code = dict(spec.codes)[VARLEN]
    wrong = code.replace("index_copy(0, real, packed)", "index_copy(0, real.flip(0), packed)")
    assert wrong != code
    with pytest.raises((DiffersFromTheCall, RuntimeError)):
        packed_cost.measure_code(spec, wrong)
    shuffled = dict(spec.codes)[VARLEN].replace("packed = varlen_attn(", "packed = -varlen_attn(")
    with pytest.raises(DiffersFromTheCall, match="differs"):
        packed_cost.measure_code(spec, shuffled)
    trained = packed_spec(workload(direction="fwd+bwd"), signature(grad=True), KEY_PADDING, LENGTHS)
    code = dict(trained.codes)[VARLEN]
    assert "index_copy(0, real, grad)" in code, "the gather's own backward"
    packed_cost.measure_code(trained, code)
    wrong_gradient = code.replace("index_copy(0, real, grad)", "index_copy(0, real, 2 * grad)")
    with pytest.raises(DiffersFromTheCall, match="its dq differs"):
        packed_cost.measure_code(trained, wrong_gradient)


def test_the_nested_jagged_code_gives_the_calls_output_where_torch_runs_it_on_the_cpu():
    spec = packed_spec(workload(), signature(), KEY_PADDING, LENGTHS)
    cost = packed_cost.measure_code(spec, dict(spec.codes)[NESTED])
    assert cost.matched < 1e-5


# -- where torch cannot run it ------------------------------------------------------------------------------------
def test_varlen_attn_is_cuda_only_on_this_torch():
    """Verified here (torch 2.14.1, CPU): the module imports, the call raises NotImplementedError."""
    varlen = pytest.importorskip("torch.nn.attention.varlen")
    q = torch.randn(10, 2, 16)
    cu = torch.tensor([0, 4, 10], dtype=torch.int32)
    with pytest.raises(NotImplementedError):
        varlen.varlen_attn(q, q, q, cu, cu, 6, 6)
    assert packed_cost.missing(VARLEN, torch.device("cpu")) == NEEDS_CUDA
    assert refusal("cpu") == NEEDS_CUDA and refusal("cuda:0") is None


def test_a_torch_without_the_varlen_module_says_so_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.nn.attention.varlen", None)  # import raises ImportError
    why = packed_cost.missing(VARLEN, torch.device("cuda"))
    assert "has no torch.nn.attention.varlen" in why and "2.10" in why and "\n" not in why
    spec = packed_spec(workload(), signature(), KEY_PADDING, LENGTHS)
    answer = packed_cost.measure_spec(spec)
    assert answer[VARLEN] == {"error": packed_cost.missing(VARLEN, torch.device("cpu"))}


def test_report_on_the_cpu_says_in_one_line_that_packing_is_not_measured():
    from rich.console import Console

    rows, line = packed_alternatives(workload().with_changes(lengths=LENGTHS), "cpu", Console(stderr=True))
    assert rows == [] and "CUDA only" in line and "\n" not in line
    assert packed_alternatives(workload(), "cpu", Console(stderr=True)) == ([], "")


# -- the advice ---------------------------------------------------------------------------------------------------
def gpu_lab(gpu_us: list[float], eager_us: list[float]):
    session = lab({})
    from sdpa_tui.core.protocol.records import BackendStatus

    session.apply(BackendStatus(0, Backend.EFFICIENT, "ok"))
    for g, e in zip(gpu_us, eager_us):
        session.apply(Sample(0, Backend.EFFICIENT, g, e, "graph", 10, 0.0))
    return session


def test_packed_attention_faster_on_the_eager_clock_is_advised_there_with_its_code():
    """On a GPU the backends are compared on GPU/call; varlen's code waits for the GPU once a call, so it has no
    GPU/call and is held against the call's backend on the eager clock."""
    spec = packed_spec(workload(), signature(), KEY_PADDING, LENGTHS)
    cost = PackedCost((50.0, 51, 49, 50, 52, 48), (), 30.0, 2e-7, None, 0.01)  # MADE-UP samples
    packed = packed_alternative(VARLEN, cost, spec)
    session = gpu_lab([100.0, 101, 99, 100, 102, 98], [120.0, 121, 119, 120, 122, 118])
    advice = advise(session, "EFFICIENT_ATTENTION", outside=[packed])
    assert advice.best is packed.alternative and advice.clock == "eager" and advice.saving_us_per_call == 70.0
    assert advice.best.code == dict(spec.codes)[VARLEN] and advice.best.leaves_sdpa
    assert backend_label(VARLEN) == "varlen_attn (packed)" and backend_label(NESTED).startswith("nested jagged")
    slower = packed_alternative(VARLEN, PackedCost((130.0, 131, 129, 130, 132, 128), (), None, 2e-7, None, 0.01), spec)
    assert advise(session, "EFFICIENT_ATTENTION", outside=[slower]).best is None


def test_the_once_per_batch_part_is_shared_by_the_calls_on_one_mask():
    """Its host time over the calls that share the mask (the modules) is added to every per-call sample; the advice
    says both. A run of one module pays it in every call."""
    cost = PackedCost((50.0, 51, 49, 50, 52, 48), (40.0, 41, 39, 40, 42, 38), 30.0, 2e-7, None, 0.01,
                      batch_eager_us=(80.0, 79, 81, 80, 90), batch_kernel_us=16.0)  # MADE-UP samples
    eight = packed_spec(workload(), signature(), KEY_PADDING, LENGTHS, calls_per_batch=8)
    packed = packed_alternative(VARLEN, cost, eight)
    assert (packed.eager.median, packed.gpu.median, packed.alternative.us) == (60.0, 50.0, 32.0)
    assert packed.alternative.per_batch_us == 80.0 and packed.alternative.calls_per_batch == 8
    alone = packed_alternative(VARLEN, cost, packed_spec(workload(), signature(), KEY_PADDING, LENGTHS))
    assert alone.gpu.median == 120.0 and alone.alternative.calls_per_batch == 1
    session = gpu_lab([100.0, 101, 99, 100, 102, 98], [120.0, 121, 119, 120, 122, 118])
    assert advise(session, "EFFICIENT_ATTENTION", outside=[packed]).saving_us_per_call == 50.0
    assert advise(session, "EFFICIENT_ATTENTION", outside=[alone]).best is None, "packing in every layer: slower"
    assert PackedSpec.from_dict(eight.to_dict()).calls_per_batch == 8


def test_code_that_costs_the_host_more_than_the_call_is_not_offered_and_the_smaller_saving_is_promised():
    """On an H200, SDPA on nested tensors ran 0.36 ms of kernels a training call and 8 to 17 ms eager: faster on
    GPU/call, it made a watched training step 95 ms slower. An alternative with both clocks must beat the call on both; the
    saving promised is the smaller one."""
    spec = packed_spec(workload(), signature(), KEY_PADDING, LENGTHS)
    session = gpu_lab([100.0, 101, 99, 100, 102, 98], [120.0, 121, 119, 120, 122, 118])
    host_bound = packed_alternative(NESTED, PackedCost((9000.0, 9100, 8900, 9000, 9050, 8950),
                                                       (40.0, 41, 39, 40, 42, 38), 38.0, 2e-7, None, 0.01), spec)
    advice = advise(session, "EFFICIENT_ATTENTION", outside=[host_bound])
    assert advice.best is None and "nothing measured here is faster" in advice.note
    both = packed_alternative(VARLEN, PackedCost((90.0, 91, 89, 90, 92, 88), (40.0, 41, 39, 40, 42, 38), 38.0, 2e-7,
                                                 None, 0.01), spec)  # MADE-UP samples: saves 60 on GPU, 30 eager
    advice = advise(session, "EFFICIENT_ATTENTION", outside=[host_bound, both])
    assert advice.best is both.alternative and advice.clock == "eager" and advice.saving_us_per_call == 30.0


def test_the_advice_says_the_once_per_batch_part_and_the_calls_that_share_it():
    """The Calls view's alternatives and the report's advice: the packed code's time per call holds 1/N of its
    once-per-batch part, and both say so."""
    from sdpa_tui.core.calls.advice import run_advice
    from sdpa_tui.ui.watch.call_rows import alternatives_lines
    from sdpa_tui.watch.report.call_cells import advice_lines

    spec = packed_spec(workload(), signature(), KEY_PADDING, LENGTHS, calls_per_batch=8)
    cost = PackedCost((50.0, 51, 49, 50, 52, 48), (40.0, 41, 39, 40, 42, 38), 30.0, 2e-7, None, 0.01,
                      batch_eager_us=(80.0,) * 5)  # MADE-UP samples
    advice = advise(gpu_lab([100.0, 101, 99, 100, 102, 98], [120.0, 121, 119, 120, 122, 118]), "EFFICIENT_ATTENTION",
                    outside=[packed_alternative(VARLEN, cost, spec)])
    assert advice.saving_us_per_call == 50.0  # GPU/call 40 + 80 / 8 against 100
    text = "\n".join(alternatives_lines(advice, 64))
    assert "with 1/8 of its once-per-batch 80.0 µs (8 modules on one mask)" in text
    assert "saves 50.0 µs per call" in text and "# once per batch" in text

    from types import SimpleNamespace

    report = SimpleNamespace(run_advice=run_advice([("the padded call", 64, advice)]), advice_note="")
    line = " ".join(advice_lines(report))
    assert "50.0 µs per call × 64 (its once-per-batch part, 80.0 µs, counted once per 8 call(s)" in line


def test_with_a_batch_of_leads_read_the_advice_is_on_the_paced_clock_and_the_calls_view_says_so():
    """Packed code measured beside a training call, the host's lead read at every call of a batch: the advice holds
    the code to GPU/call plus the GPU's wait for the host, and the Calls view lists GPU/call under that name."""
    from sdpa_tui.core.calls.advice import HostLead
    from sdpa_tui.core.calls.host_pace import TypicalBatch
    from sdpa_tui.core.calls.packed_alternative import CallClocks
    from sdpa_tui.ui.watch.call_rows import alternatives_lines

    spec = packed_spec(workload(), signature(), KEY_PADDING, LENGTHS, calls_per_batch=4)
    near = (40.0, 41, 39, 40, 42, 38)
    cost = PackedCost((90.0, 91, 89, 90, 92, 88), near, 38.0, 2e-7, None, 0.01, host_us=(300.0,) * 6,
                      host_forward_us=(100.0,) * 6,
                      call=CallClocks((120.0,) * 6, (100.0, 101, 99, 100, 102, 98), (200.0,) * 6, (60.0,) * 6))
    lab_session = gpu_lab([100.0, 101, 99, 100, 102, 98], [120.0, 121, 119, 120, 122, 118])
    far = HostLead(None, None, TypicalBatch((5_000.0,) * 4, (5_000.0,) * 4, 3), 0.5)
    advice = advise(lab_session, "EFFICIENT_ATTENTION", outside=[packed_alternative(VARLEN, cost, spec)],
                    host_lead=far)
    assert advice.clock == "paced" and advice.saving_us_per_call == pytest.approx(60.0)  # 100 - 40, no wait
    text = "\n".join(alternatives_lines(advice, 64))
    assert "alternatives (lab, GPU/call, the best paced by the host" in text and "40.0 µs" in text
    # the host at the GPU's heels: the forward adds 40 µs a call, the backward 60; the GPU's 60 saved is lost
    close = HostLead(None, None, TypicalBatch((0.0,) * 4, (0.0,) * 4, 3), 0.5)
    slow = advise(lab_session, "EFFICIENT_ATTENTION", outside=[packed_alternative(VARLEN, cost, spec)],
                  host_lead=close)
    assert slow.best is None and "paced" in slow.alternatives[-1].judged


def test_with_the_queued_clock_read_the_paced_clock_holds_the_code_to_its_queued_time_not_its_gpu_per_call():
    """The code's many small kernels cost more where eager launches leave gaps between them (queued behind the
    host's launches) than in a CUDA graph's replay: where both the code and the call were read on that clock, the
    paced clock compares those, and says so."""
    from sdpa_tui.core.calls.advice import HostLead
    from sdpa_tui.core.calls.host_pace import TypicalBatch
    from sdpa_tui.core.calls.packed_alternative import CallClocks

    spec = packed_spec(workload(), signature(), KEY_PADDING, LENGTHS, calls_per_batch=4)
    call = CallClocks((120.0,) * 6, (100.0, 101, 99, 100, 102, 98), (200.0,) * 6, (60.0,) * 6,
                      queued_us=(104.0, 105, 103, 104, 106, 102))
    cost = PackedCost((90.0, 91, 89, 90, 92, 88), (40.0, 41, 39, 40, 42, 38), 38.0, 2e-7, None, 0.01,
                      host_us=(300.0,) * 6, host_forward_us=(100.0,) * 6, call=call,
                      queued_us=(54.0, 55, 53, 54, 56, 52))
    assert PackedCost.from_dict(cost.to_dict()) == cost  # the new clock survives the child's JSON line
    lab_session = gpu_lab([100.0, 101, 99, 100, 102, 98], [120.0, 121, 119, 120, 122, 118])
    far = HostLead(None, None, TypicalBatch((5_000.0,) * 4, (5_000.0,) * 4, 3), 0.5)
    advice = advise(lab_session, "EFFICIENT_ATTENTION", outside=[packed_alternative(VARLEN, cost, spec)],
                    host_lead=far)
    assert advice.clock == "paced" and advice.saving_us_per_call == pytest.approx(104.0 - 54.0)  # not 100 - 40
    judged = advice.alternatives[-1].judged
    assert "queued behind the host's launches 54.0 µs against 104.0" in judged
    assert judged.endswith("held to its queued time with that wait (paced)")
    without = advise(lab_session, "EFFICIENT_ATTENTION", host_lead=far, outside=[packed_alternative(
        VARLEN, replace(cost, queued_us=()), spec)])  # the code not read queued: both on GPU/call, as before
    assert without.saving_us_per_call == pytest.approx(60.0) and "queued" not in without.alternatives[-1].judged


def picked(gpu_us: list[float], eager_us: list[float]):
    """A lab session on a GPU where SDPA picked Mem-efficient, with these samples."""
    from sdpa_tui.core.protocol.records import BackendStatus, Dispatch

    session = lab({})
    session.apply(Dispatch(0, Backend.EFFICIENT, ("EFFICIENT_ATTENTION", "MATH"), ""))
    session.apply(BackendStatus(0, Backend.EFFICIENT, "ok"))
    for g, e in zip(gpu_us, eager_us):
        session.apply(Sample(0, Backend.EFFICIENT, g, e, "graph", 10, 0.0))
    return session


def test_the_labs_lines_say_the_per_call_saving_and_from_how_many_calls_the_batch_part_pays():
    """report --padding: the clocks time the every-call part, held against SDPA's pick as watch's advice holds them
    (faster on both clocks, the smaller saving said: 30 µs eager here, 40 on GPU/call); the once-per-batch part is said
    apart, with the calls on one mask from which the saving pays for it."""
    from sdpa_tui.exports.lab.packed_rows import PackedRow, packed_lines

    session = picked([100.0, 101, 99, 100, 102, 98], [120.0, 121, 119, 120, 122, 118])
    faster = PackedCost((90.0, 91, 89, 90, 92, 88), (60.0, 61, 59, 60, 62, 58), 55.0, 2e-7, None, 0.01,
                        batch_eager_us=(90.0,) * 5, batch_kernel_us=20.0)  # MADE-UP samples
    slower = PackedCost((190.0, 191, 189, 190, 192, 188), (160.0, 161, 159, 160, 162, 158), 155.0, 2e-7, None, 0.01,
                        batch_eager_us=(90.0,) * 5)
    lines = packed_lines(session, [PackedRow(VARLEN, faster), PackedRow(NESTED, slower), PackedRow(VARLEN, None, "x")])
    assert lines[0].startswith("varlen_attn (packed) is faster: 90.0 µs eager") and "saves 30.0 µs a call" in lines[0]
    assert "once per batch, 90.0 µs to read the mask's real tokens: paid back from 3 call(s) on one mask" in lines[0]
    assert "is not faster beyond noise" in lines[1] and "paid back" not in lines[1] and "90.0 µs" in lines[1]
    assert lines[2] == "varlen_attn (packed) not run: x"


def test_the_padding_sweep_shows_the_batch_part_and_where_packing_pays():
    from rich.console import Console

    from sdpa_tui.exports.lab.packed_rows import PackedRow
    from sdpa_tui.exports.sweep.padding_sweep import PaddingPoint, padding_table, pays_from

    def cost(us: float) -> PackedCost:
        return PackedCost((us,) * 6, (us,) * 6, us, 2e-7, None, 0.01, batch_eager_us=(45.0,) * 5)  # MADE-UP

    session = picked([100.0, 101, 99, 100, 102, 98], [120.0, 121, 119, 120, 122, 118])
    points = [PaddingPoint(p, session, (PackedRow(VARLEN, cost(us)),)) for p, us in ((0.2, 130.0), (0.5, 70.0),
                                                                                      (0.8, 30.0))]
    assert pays_from(points) == 0.5
    console = Console(width=160, record=True)
    console.print(padding_table(points))
    text = console.export_text()
    assert "once/batch" in text and "packing pays from 50% padding on" in text
    row = next(line for line in text.splitlines() if line.lstrip().startswith("80%"))
    assert row.split()[-1] == "45.0" and "30.0 *" in row
    spec = lab_spec(workload().with_changes(lengths=LENGTHS), "cuda:0")
    assert spec.mask_form == KEY_PADDING and spec.workload.lengths == LENGTHS
    assert "window_size" not in dict(spec.codes)[VARLEN]


@pytest.mark.cuda
@pytest.mark.parametrize("form", [KEY_PADDING, CAUSAL_KEY_PADDING])
def test_on_a_gpu_varlen_attn_gives_the_calls_output_on_the_real_rows_and_is_timed(form):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    pytest.importorskip("torch.nn.attention.varlen")
    w = Workload(batch=8, heads=16, kv_heads=4, seq=512, kv_seq=512, head_dim=128, dtype="bf16", mask="padding",
                 direction="fwd+bwd")
    rows = 512 if form == CAUSAL_KEY_PADDING else 1
    sig = CallSignature((8, 16, 512, 128), (8, 4, 512, 128), "torch.bfloat16", "cuda:0", "bool", (8, 1, rows, 512),
                        gqa=True, grad=True)
    spec = packed_spec(w, sig, form, lengths_for_padding(8, 512, 0.4))
    answer = packed_cost.measure_spec(spec)
    cost = FlexCost.from_dict(answer[VARLEN]["cost"])
    assert cost.matched < 3e-2 and cost.error < 3e-2 and cost.kernel_us > 0 and len(cost.eager_us) == 15
    assert set(answer) == {VARLEN, NESTED}


def test_the_varlen_code_uses_the_keywords_of_the_torch_it_is_for():
    """varlen_attn took is_causal in torch 2.10 and window_size from 2.11 (an H100's 2.11 raised TypeError on
    is_causal), scale and enable_gqa from 2.12 (2.11 raised TypeError on enable_gqa)."""
    import dataclasses

    sig = dataclasses.replace(signature(CAUSAL_KEY_PADDING, gqa=True), scale=0.1)
    first, older, newer = (varlen_code(sig, CAUSAL_KEY_PADDING, v) for v in ((2, 10), (2, 11), (2, 12)))
    assert "is_causal=True" in first and "window_size" not in first
    assert "window_size=(-1, 0)" in older and "is_causal" not in older
    for code in (first, older):
        assert "repeat_interleave" in code and "qs = q * (0.1 * q.shape[-1] ** 0.5)" in code
        assert "enable_gqa" not in code and "scale=" not in code
    assert "window_size=(-1, 0)" in newer and "enable_gqa=True" in newer and "scale=0.1" in newer
    assert "is_causal" not in newer and "repeat_interleave" not in newer
    default = dataclasses.replace(sig, scale=sig.q_shape[-1] ** -0.5)  # the default scale: nothing folded or passed
    assert "qs =" not in varlen_code(default, CAUSAL_KEY_PADDING, (2, 11))
    assert "scale=" not in varlen_code(default, CAUSAL_KEY_PADDING, (2, 12))


def test_the_code_is_held_against_the_call_timed_beside_it_not_the_labs_contiguous_inputs():
    """On an H100 the lab's contiguous inputs read 1,766 µs a training call where the program's kernels took 1,936 and
    the call timed beside the code, laid out as the program's, 1,944: the saving is counted from the latter."""
    from sdpa_tui.core.calls.advice import HostLead
    from sdpa_tui.core.calls.packed_alternative import CallClocks
    from sdpa_tui.core.stats import Summary

    spec = packed_spec(workload(), signature(), KEY_PADDING, LENGTHS)
    session = gpu_lab([100.0, 101, 99, 100, 102, 98], [120.0, 121, 119, 120, 122, 118])
    beside = CallClocks((150.0, 151, 149, 150, 152, 148), (130.0, 131, 129, 130, 132, 128), (20.0,) * 6)
    cost = PackedCost((90.0, 91, 89, 90, 92, 88), (60.0, 61, 59, 60, 62, 58), 58.0, 2e-7, None, 0.01,
                      host_us=(25.0,) * 6, call=beside)  # MADE-UP samples
    packed = packed_alternative(VARLEN, cost, spec)
    assert packed.alternative.call_gpu_us == 130.0
    no_lead = advise(session, "EFFICIENT_ATTENTION", outside=[packed])
    # the smaller saving against the call beside it: 60 eager (150 - 90), 70 on GPU/call (130 - 60); the lab's call
    # (100 GPU/call, 120 eager) would have said 30
    assert (no_lead.clock, no_lead.saving_us_per_call) == ("eager", 60.0)
    led = advise(session, "EFFICIENT_ATTENTION", outside=[packed], host_lead=HostLead(Summary.of([500.0] * 8)))
    assert (led.clock, led.saving_us_per_call, led.current_us) == ("gpu", 70.0, 130.0)
    assert "covers" in led.best.judged
    short = advise(session, "EFFICIENT_ATTENTION", outside=[packed], host_lead=HostLead(Summary.of([1.0] * 8)))
    assert short.best is None and "does not cover" in short.alternatives[-1].judged
