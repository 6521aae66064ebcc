"""Issue 36: advice code correct by construction. Each rewrite's code and each backend switch is a complete replacement
of the call that keeps its own arguments, and is run against the call (``engine/costs/code_check.py``) before it is offered:
a code whose output differs from the call's, or that raises, is not offered, and a note says why."""

from __future__ import annotations

import re
import sys

import pytest
from support.lab_sessions import lab
from support.paths import PROGRAMS
from support.watching import watch

from sdpa_tui.core.backends import ALL_BACKENDS, Backend
from sdpa_tui.core.calls.advice import advise
from sdpa_tui.core.calls.call_code import (
    REWRITE_NUMERICS,
    CodesToCheck,
    OfferedCode,
    backend_code,
    causal_code,
    rewrite_codes,
)
from sdpa_tui.core.calls.call_signature import CallSignature
from sdpa_tui.core.calls.mask_forms import CAUSAL, KEY_PADDING, NONE
from sdpa_tui.core.calls.watch_lab import lab_workload

FP32_TOLERANCE = 2e-3  # OUTPUT_TOLERANCE of torch.float32
OLD_PAD_HEAD_DIM = ("out = F.scaled_dot_product_attention(*(F.pad(t, (0, 4)) for t in (q, k, v)), "
                    "scale=20 ** -0.5)[..., :20]  # the pads copy Q, K, V: not in this time")
"""The padded call as the advice wrote it before: the true head dim's scale, whatever scale the call passed."""

CAUSAL_MASK = CallSignature((2, 4, 64, 16), (2, 4, 64, 16), "torch.float32", "cpu", mask="bool", mask_shape=(64, 64))
GQA_PADDED = CallSignature((2, 8, 64, 16), (2, 2, 64, 16), "torch.float32", "cpu", mask="float",
                           mask_shape=(2, 1, 1, 64), gqa=True)
SCALED_HEAD_DIM_20 = CallSignature((2, 4, 64, 20), (2, 4, 64, 20), "torch.float32", "cpu", scale=0.3)
WITH_DROPOUT = CallSignature((2, 4, 64, 20), (2, 4, 64, 20), "torch.float32", "cpu", dropout_p=0.3)
PADDING_MASK = CallSignature((2, 4, 64, 16), (2, 4, 64, 16), "torch.float32", "cpu", mask="bool",
                             mask_shape=(2, 1, 1, 64))


def codes(signature: CallSignature, mask_form: str, *extra: OfferedCode) -> CodesToCheck:
    """Every backend switch and rewrite of a call, and ``extra`` codes, to run against it."""
    workload, _ = lab_workload(signature)
    offered = [OfferedCode(b.value, backend_code(b, signature)) for b in ALL_BACKENDS]
    offered += [OfferedCode(name, code, REWRITE_NUMERICS.get(name, ""))
                for name, code in rewrite_codes(signature, workload).items()]
    return CodesToCheck(workload, "cpu", signature, mask_form, tuple(offered) + extra)


@pytest.fixture(scope="module")
def checked():
    """One checking process for every case (torch is imported once), as a watch run has."""
    from sdpa_tui.engine.host.code_check_client import check_codes

    calls = {"causal mask": codes(CAUSAL_MASK, CAUSAL),
             "gqa padded": codes(GQA_PADDED, KEY_PADDING),
             "scaled head dim 20": codes(SCALED_HEAD_DIM_20, NONE, OfferedCode("old pad_head_dim", OLD_PAD_HEAD_DIM)),
             "dropout": codes(WITH_DROPOUT, NONE),
             "padding mask": codes(PADDING_MASK, KEY_PADDING, OfferedCode("raises", "out = F.sdpa(q, k, v)"),
                                   OfferedCode("no out", "result = q"))}
    return dict(zip(calls, check_codes(list(calls.values()), 300)))


@pytest.mark.parametrize("case, rewrite", [("causal mask", "is_causal"), ("gqa padded", "expand_kv"),
                                           ("scaled head dim 20", "pad_head_dim")])
def test_each_rewrite_run_by_the_check_gives_the_output_of_the_call_it_rewrites(checked, case, rewrite):
    """is_causal=True for a causal bool mask, K/V expanded for a GQA call with a (float) key-padding mask, the head dim
    20 padded with the call's own scale; every backend switch keeps the call's arguments too."""
    found = checked[case]
    assert found[rewrite].offered and found[rewrite].matched < 1e-5, found[rewrite]
    assert all(found[b.value].offered for b in ALL_BACKENDS), found


def test_the_padded_call_keeps_the_calls_scale_where_the_old_code_did_not(checked):
    found = checked["scaled head dim 20"]
    assert "scale=0.3" in rewrite_codes(SCALED_HEAD_DIM_20, lab_workload(SCALED_HEAD_DIM_20)[0])["pad_head_dim"]
    assert not found["old pad_head_dim"].offered
    assert "differs from the call's SDPA output" in found["old pad_head_dim"].why
    assert found["old pad_head_dim"].why.endswith("(fp32); not offered")


def test_is_causal_for_a_padding_mask_is_refused_with_why(checked):
    """A deliberately wrong code: is_causal=True in place of a key-padding mask gives another output."""
    found = checked["padding mask"]
    assert "is_causal=True" in causal_code(PADDING_MASK) and not found["is_causal"].offered
    assert "its output differs from the call's SDPA output on the same inputs: max rel err" in found["is_causal"].why
    assert found["expand_kv"].offered and found["pad_head_dim"].offered, "the mask passed through as attn_mask"


def test_a_call_with_dropout_draws_it_alike_for_the_call_and_the_code_and_a_refusal_says_dropout_may_differ(checked):
    """On the CPU the call and every switch run MATH, whose dropout after the same seed is the same; on a GPU another
    backend draws other dropout, which the note says (code_check.py's measurement on an H100)."""
    found = checked["dropout"]
    assert all(found[b.value].offered for b in ALL_BACKENDS) and found["pad_head_dim"].offered, found
    assert not found["is_causal"].offered and found["is_causal"].why.endswith(
        "(the call has dropout_p=0.3: where the code runs another backend, it draws other dropout); not offered")


def test_a_code_that_raises_or_assigns_no_out_is_refused_with_why(checked):
    found = checked["padding mask"]
    assert found["raises"].why.startswith("it raised AttributeError:") and not found["raises"].offered
    assert found["no out"].why == "it assigns no tensor to out; not offered"


def test_a_refused_code_is_left_out_of_what_is_offered_and_a_note_says_why():
    """What ``watch`` measures and offers (``watch/advice/advise.checked_codes``): the codes that gave the call's
    output; the run's note names each refused one with its reason."""
    from sdpa_tui.watch.advice.advise import checked_codes

    notes: list[str] = []
    offered = checked_codes({3: codes(PADDING_MASK, KEY_PADDING)}, notes, lambda i: f"signature {i}", 300)
    assert set(offered[3]) == {*(b.value for b in ALL_BACKENDS), "expand_kv", "pad_head_dim", "bf16"}
    assert offered[3]["expand_kv"] == rewrite_codes(PADDING_MASK, lab_workload(PADDING_MASK)[0])["expand_kv"]
    (note,) = notes
    assert note.startswith("signature 3: the code of is_causal: its output differs from the call's SDPA output on "
                           "the same inputs: max rel err ") and note.endswith("(fp32); not offered"), note


def test_the_bf16_rewrite_is_compared_at_bf16s_tolerance(checked):
    bf16 = checked["gqa padded"]["bf16"]
    assert bf16.offered and FP32_TOLERANCE < bf16.matched <= 3e-2, bf16


def test_the_codes_keep_what_the_call_passed():
    call = CallSignature((1, 8, 32, 20), (1, 2, 32, 20), "torch.float32", "cpu", mask="bool", dropout_p=0.1,
                         scale=0.25, gqa=True)
    own = "attn_mask=attn_mask, dropout_p=0.1, scale=0.25"
    texts = rewrite_codes(call, lab_workload(call)[0])
    assert f"(q, k, v, {own}, enable_gqa=True)" in backend_code(Backend.FLASH, call)
    assert texts["is_causal"].startswith("out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1, "
                                         "is_causal=True, scale=0.25, enable_gqa=True)")
    assert texts["expand_kv"].endswith(f"v.repeat_interleave(4, dim=-3), {own})"), "no enable_gqa once expanded"
    assert f"(0, 4)) for t in (q, k, v)), {own}, enable_gqa=True)[..., :20]" in texts["pad_head_dim"]
    unscaled = CallSignature((1, 2, 8, 20), (1, 2, 8, 20), "torch.float32", "cpu")
    assert "scale=20 ** -0.5)[..., :20]" in rewrite_codes(unscaled, lab_workload(unscaled)[0])["pad_head_dim"], \
        "no scale passed: the true head dim's"


def test_a_backend_whose_code_was_refused_is_listed_without_code_and_never_advised():
    session = lab({Backend.MATH: [100.0, 101, 99, 100, 102, 98], Backend.FLASH: [40.0, 41, 39, 40, 42, 38]})
    checked = advise(session, "MATH", codes={"MATH": backend_code(Backend.MATH, CAUSAL_MASK),
                                             "FLASH_ATTENTION": backend_code(Backend.FLASH, CAUSAL_MASK)})
    assert checked.best.backend == "FLASH_ATTENTION" and checked.best.code.endswith("attn_mask=attn_mask)")
    refused = advise(session, "MATH", codes={"MATH": backend_code(Backend.MATH, CAUSAL_MASK)})
    assert refused.best is None and "faster beyond noise" in refused.note
    assert next(a for a in refused.alternatives if a.backend == "FLASH_ATTENTION").code == ""


def test_watch_offers_each_rewrite_only_once_its_code_gave_the_calls_output(tmp_path):
    """End to end on the CPU: a GQA call with head dim 20, a causal mask as a tensor and scale 0.3. Every rewrite is
    measured and its code, pasted in place of the program's call, gives the program's output."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    proc, report = watch(tmp_path, sys.executable, str(PROGRAMS / "rewrites_checked.py"), advice=True, flex=False,
                         timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "running the advice's code against 1 call(s) before it is offered" in proc.stderr
    (call,) = report["calls"]
    shown = {a["variant"]: a["code"] for a in call["alternatives"]}
    assert set(shown) == {"backend", "is_causal", "expand_kv", "pad_head_dim", "bf16"}, shown
    assert "the code of" not in report["advice"]["note"], "no code refused: " + report["advice"]["note"]
    assert re.search(r"s of a \d+ s budget \(and \d+\.\d s running the codes against their calls first\)",
                     report["advice"]["note"]), "the check is said apart from the budget: " + report["advice"]["note"]
    torch.manual_seed(0)  # the program's tensors
    q = torch.randn(1, 8, 128, 20)
    k, v = torch.randn(1, 2, 128, 20), torch.randn(1, 2, 128, 20)
    attn_mask = torch.ones(128, 128, dtype=torch.bool).tril()
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=0.3, enable_gqa=True)
    for variant, code in shown.items():
        scope = {"F": F, "SDPBackend": SDPBackend, "sdpa_kernel": sdpa_kernel, "q": q, "k": k, "v": v,
                 "attn_mask": attn_mask}
        exec(code, scope)
        tolerance = 3e-2 if variant == "bf16" else 1e-5
        torch.testing.assert_close(scope["out"], expected, rtol=tolerance, atol=tolerance, msg=f"{variant}: {code}")
