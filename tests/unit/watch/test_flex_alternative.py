"""FlexAttention as an alternative that leaves SDPA (issue: measured advice): measured at the lab workload in its own
process, judged by the same noise rule as the backends, and the code a user would paste gives SDPA's output."""

from __future__ import annotations

import pytest
from support.lab_sessions import lab

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.calls.advice import advise, run_advice
from sdpa_tui.core.calls.flex_alternative import (
    FLEX,
    FlexCost,
    FlexSpec,
    flex_alternative,
    flex_code,
    flex_spec,
    refusal,
)
from sdpa_tui.core.calls.mask_forms import CAUSAL, CAUSAL_KEY_PADDING, KEY_PADDING, NONE, OTHER
from sdpa_tui.core.calls.watch_report import backend_label
from sdpa_tui.core.workload import Workload

pytestmark = pytest.mark.torch_range

MATH_US = [100.0, 101, 99, 100, 102, 98]  # MADE-UP lab samples for the pure verdict


def cost(eager: list[float], compile_s: float = 7.5) -> FlexCost:
    """MADE-UP: a FlexAttention measurement with these eager samples."""
    return FlexCost(tuple(eager), (), None, 2e-7, None, compile_s)


def test_flexattention_faster_beyond_noise_is_the_best_change_and_says_it_leaves_sdpa():
    spec = flex_spec(Workload(dtype="fp32", mask="causal"), "cpu", CAUSAL)
    flex = flex_alternative(cost([40.0, 41, 39, 40, 42, 38]), spec)
    advice = advise(lab({Backend.MATH: MATH_US}), "MATH", outside=[flex])
    assert advice.best is flex.alternative and advice.best.leaves_sdpa and advice.saving_us_per_call == 60.0
    assert advice.best.to_dict()["leaves_sdpa"] is True and advice.best.eager_us == 40.0
    assert advice.best.code == spec.code, "the code shown is the text the measuring ran"
    assert advice.best.first_call_s == 7.5 and advice.best.to_dict()["first_call_s"] == 7.5
    top = run_advice([("q[1,8,512,64]", 10, advice)]).top
    assert top[0]["to"] == FLEX and top[0]["variant"] == "flex_attention" and top[0]["saving_us"] == 600.0
    assert backend_label(FLEX) == "FlexAttention"


def test_flexattention_within_noise_or_slower_is_listed_but_not_advised():
    spec = flex_spec(Workload(dtype="fp32"), "cpu", NONE)
    slower = flex_alternative(cost([180.0, 181, 179, 180, 182, 178]), spec)
    noisy = flex_alternative(cost([97.0, 107, 88, 101, 93, 99]), spec)
    for flex in (slower, noisy):
        advice = advise(lab({Backend.MATH: [100.0, 110, 90, 105, 95, 100]}), "MATH", outside=[flex])
        assert advice.best is None and flex.alternative in advice.alternatives


def test_flexattention_has_no_backward_on_the_cpu_and_says_so():
    assert refusal(Workload(direction="fwd+bwd"), "cpu") == "FlexAttention has no backward on the CPU"
    assert refusal(Workload(direction="fwd+bwd"), "cuda:0") is None and refusal(Workload(), "cpu") is None


def test_a_spec_and_a_cost_round_trip_through_json():
    spec = flex_spec(Workload(heads=8, kv_heads=2, mask="padding"), "cuda:1", CAUSAL_KEY_PADDING)
    assert FlexSpec.from_dict(spec.to_dict()) == spec
    measured = FlexCost((1.0, 2.0), (0.5,), 0.4, 1e-3, 12.5, 4.2, "a note", 3e-7)
    assert FlexCost.from_dict(measured.to_dict()) == measured


@pytest.mark.parametrize("form, gqa", [(CAUSAL, False), (KEY_PADDING, True), (CAUSAL_KEY_PADDING, True)])
def test_the_code_given_runs_and_gives_sdpas_output(form, gqa):
    """The advice's lines, pasted where the SDPA call was: causal, key padding, and transformers' causal mask with
    padding (issue 36, item 5: its code had no causal term), GQA too."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    batch, seq, heads, kv_heads = 2, 128, 4, 2 if gqa else 4
    q = torch.randn(batch, heads, seq, 32)
    k, v = (torch.randn(batch, kv_heads, seq, 32) for _ in range(2))
    key_keep = torch.ones(batch, seq, dtype=torch.bool)
    key_keep[0, 100:] = False
    scope = {"torch": torch, "q": q, "k": k, "v": v, "key_keep": key_keep}
    exec(flex_code(Workload(batch=batch, heads=heads, kv_heads=kv_heads, seq=seq, kv_seq=seq, head_dim=32,
                            dtype="fp32", mask="causal" if form == CAUSAL else "padding"), form), scope)
    triangle = torch.ones(seq, seq, dtype=torch.bool).tril()
    sdpa = {CAUSAL: dict(is_causal=True), KEY_PADDING: dict(attn_mask=key_keep[:, None, None, :]),
            CAUSAL_KEY_PADDING: dict(attn_mask=key_keep[:, None, None, :] & triangle)}[form]
    expected = F.scaled_dot_product_attention(q, k, v, enable_gqa=gqa, **sdpa)
    torch.testing.assert_close(scope["out"], expected, rtol=1e-4, atol=1e-5)


def test_a_mask_no_mask_mod_here_expresses_gets_no_flexattention_code():
    assert isinstance(flex_spec(Workload(mask="padding"), "cpu", OTHER), str)
    assert "not read" in flex_spec(Workload(mask="padding"), "cpu", "")
    assert "(q_idx >= kv_idx) & key_keep[b, kv_idx]" in flex_spec(Workload(mask="padding"), "cpu",
                                                                   CAUSAL_KEY_PADDING).code


def test_code_whose_output_differs_from_the_calls_is_not_offered():
    """Correct by construction: the measuring runs the spec's code on inputs with the call's mask form and compares
    its output with SDPA's call before timing it. The code once offered for transformers' causal mask with padding
    (key padding alone) differs there, and is refused; the code written for that form passes."""
    from sdpa_tui.engine.host.flex_cost_client import measure_flex

    workload = Workload(batch=2, heads=2, kv_heads=1, seq=64, kv_seq=64, head_dim=16, dtype="fp32", mask="padding")
    right = flex_spec(workload, "cpu", CAUSAL_KEY_PADDING)
    wrong = FlexSpec(workload, "cpu", CAUSAL_KEY_PADDING, flex_code(workload, KEY_PADDING))
    (refused, why), (offered, _) = measure_flex([wrong, right], 300)
    assert refused is None and "differs from the call's SDPA output" in why and "not offered" in why, why
    assert offered is not None and offered.matched < 1e-5 and offered.error < 1e-5


def test_the_measuring_process_times_flexattention_at_the_labs_workload_and_answers_each_spec():
    """On the CPU: eager samples enough for the noise rule, the error against float64, the compile time apart; a
    backward refused in words; a failing spec answered without losing the next."""
    from sdpa_tui.core.lab.faster import MIN_SAMPLES
    from sdpa_tui.engine.host.flex_cost_client import measure_flex

    small = dict(batch=1, heads=2, kv_heads=1, seq=64, kv_seq=64, head_dim=16, dtype="fp32")
    specs = [flex_spec(Workload(**small, mask="padding"), "cpu", KEY_PADDING),
             flex_spec(Workload(**small, direction="fwd+bwd"), "cpu", NONE),
             flex_spec(Workload(**small), "no-such-device", NONE),
             flex_spec(Workload(**small, mask="causal"), "cpu", CAUSAL)]
    (padded, why), (backward, refused), (bad, failed), (causal, _) = measure_flex(specs, 300)
    assert why == "" and len(padded.eager_us) >= MIN_SAMPLES and all(t > 0 for t in padded.eager_us)
    assert padded.error < 1e-5 and padded.compile_s > 0 and padded.gpu_us == () and padded.kernel_us is None
    assert backward is None and refused == "FlexAttention has no backward on the CPU"
    assert bad is None and failed, "a spec that cannot run says why"
    assert causal is not None and causal.error < 1e-5


@pytest.mark.cuda
def test_on_a_gpu_flexattention_gets_the_labs_three_clocks():
    """GPU/call from a CUDA graph of the compiled calls, the kernel time from torch.profiler, the peak memory; the
    kernels' own time cannot exceed the graph's time per call by more than the graph's noise."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from sdpa_tui.core.lab.faster import MIN_SAMPLES
    from sdpa_tui.core.stats import Summary
    from sdpa_tui.engine.host.flex_cost_client import measure_flex

    spec = flex_spec(Workload(batch=4, heads=16, kv_heads=16, seq=2048, kv_seq=2048, head_dim=128, dtype="bf16",
                              mask="causal"), "cuda", CAUSAL)
    backward = flex_spec(Workload(batch=2, heads=8, kv_heads=2, seq=1024, kv_seq=1024, head_dim=64, dtype="bf16",
                                  mask="padding", direction="fwd+bwd"), "cuda", CAUSAL_KEY_PADDING)
    (fwd, why), (fwd_bwd, why_bwd) = measure_flex([spec, backward], 600)
    assert fwd is not None and fwd_bwd is not None, (why, why_bwd)
    for measured in (fwd, fwd_bwd):
        assert len(measured.gpu_us) >= MIN_SAMPLES, measured.note
        gpu = Summary.of(measured.gpu_us)
        assert 0 < measured.kernel_us <= gpu.p90 * 1.1, (measured.kernel_us, gpu)
        assert measured.peak_mib is not None and measured.peak_mib > 0 and measured.error < 0.05
