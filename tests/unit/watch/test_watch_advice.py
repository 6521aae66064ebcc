"""``watch --report``'s measured advice (issue: measured advice): per signature, every backend measured at the call's
shape after the program exited, the one that beats what ran, the saving over the run, and the code."""

from __future__ import annotations

import io
import sys

import pytest
from support.lab_sessions import lab
from support.paths import PROGRAMS
from support.watching import watch

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.calls.advice import advise, refused_backends, run_advice
from sdpa_tui.core.calls.call_code import priority_code
from sdpa_tui.core.calls.call_signature import CallSignature
from sdpa_tui.core.workload import Workload

pytestmark = pytest.mark.torch_range


def test_a_faster_backend_beyond_noise_is_advised_with_its_saving_and_code():
    session = lab({Backend.MATH: [100.0, 101, 99, 100, 102, 98], Backend.FLASH: [40.0, 41, 39, 40, 42, 38]})
    advice = advise(session, "MATH", ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH", "CUDNN_ATTENTION"))
    assert advice.clock == "eager" and advice.best.backend == "FLASH_ATTENTION"
    assert advice.current_us == 100.0 and advice.best_us == 40.0 and advice.saving_us_per_call == 60.0
    assert advice.best.code == ("with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, "
                                "SDPBackend.MATH, SDPBackend.CUDNN_ATTENTION], set_priority=True):")
    assert {a.backend for a in advice.alternatives} == {"MATH", "FLASH_ATTENTION"}
    run = run_advice([("q[1,4,1024,64]", 5, advice)])
    assert run.sdpa_us == 500.0 and run.saving_us == 300.0 and run.top[0]["to"] == "FLASH_ATTENTION"


def test_a_backend_torch_refuses_for_the_call_itself_is_never_advised_however_fast_the_lab_found_it():
    """A call with dropout on the CPU: the lab (no dropout) ran Flash faster, but torch refuses Flash for the call,
    so a priority line could not make it run. Off by a flag only, it is advised."""
    session = lab({Backend.MATH: [100.0, 101, 99, 100, 102, 98], Backend.FLASH: [40.0, 41, 39, 40, 42, 38]})
    why_not = {"FLASH_ATTENTION": "Both fused kernels do not support non-zero dropout.",
               "CUDNN_ATTENTION": "cuDNN has no CPU implementation (on the CPU, SDPA has a flash kernel and MATH)"}
    refused = refused_backends(why_not)
    assert set(refused) == {"FLASH_ATTENTION", "CUDNN_ATTENTION"}
    advice = advise(session, "MATH", refused=refused)
    assert advice.best is None and advice.saving_us_per_call is None
    assert "Flash was faster in the lab, but torch refuses it for this call: Both fused kernels do not support " \
           "non-zero dropout." in advice.note
    flag_off = refused_backends({"FLASH_ATTENTION": "its flag is off at this call (sdpa_kernel, or "
                                 "torch.backends.cuda.enable_flash_sdp(False))"})
    assert flag_off == {} and advise(session, "MATH", refused=flag_off).best.backend == "FLASH_ATTENTION"


def test_within_noise_there_is_no_advice():
    session = lab({Backend.MATH: [100.0, 110, 90, 105, 95, 100], Backend.FLASH: [97.0, 107, 88, 101, 93, 99]})
    advice = advise(session, "MATH")
    assert advice.best is None and advice.saving_us_per_call is None and "faster beyond noise" in advice.note
    assert run_advice([("x", 5, advice)]).top == []


def test_the_priority_line_keeps_the_other_backends_as_fallbacks():
    assert priority_code(Backend.EFFICIENT, ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH")) == (
        "with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, "
        "SDPBackend.MATH], set_priority=True):")


def test_watch_advises_the_faster_kernel_for_a_call_kept_on_math_on_the_cpu(tmp_path):
    proc, report = watch(tmp_path, sys.executable, str(PROGRAMS / "math_forced.py"), advice=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (call,) = report["calls"]
    assert call["backend"] == "MATH"
    assert call["best"] is not None, (call["advice"], call.get("alternatives"))
    assert {a["backend"] for a in call["alternatives"]} >= {"MATH", "FLASH_ATTENTION"}
    eager = {a["backend"]: a["eager_us"] for a in call["alternatives"]}
    assert eager["FLASH_ATTENTION"] < eager["MATH"]
    # Flash or FlexAttention: they run within each other's noise on a CPU (a CI machine had FlexAttention first,
    # 2026-11-26; the suite's other pytest worker made them trade places, 2026-11-27); either beats MATH
    best = call["best"]["backend"]
    assert best in ("FLASH_ATTENTION", "FLEX_ATTENTION"), call["advice"]
    assert eager[best] < eager["MATH"]
    assert call["saving_us_per_call"] > 0
    assert ("SDPBackend.FLASH_ATTENTION" in call["best"]["code"]) == (best == "FLASH_ATTENTION")
    assert call["advice"]["measured_as"].startswith("[1, 4, 1024, 64] fp32")
    top = report["advice"]["top"]
    assert top and top[0]["to"] == best and report["advice"]["saving_us"] > 0
    assert "after the program exited" in report["advice"]["note"]
    said = " ".join(proc.stdout.split())  # the report's lines wrap at the terminal's width
    assert "advice: SDPA took" in said and (
        "MATH → FLASH_ATTENTION" if best == "FLASH_ATTENTION" else "MATH → flex_attention (FLEX_ATTENTION)") in said
    flex = next(a for a in call["alternatives"] if a["variant"] == "flex_attention")
    assert flex["backend"] == "FLEX_ATTENTION" and flex["leaves_sdpa"] is True and flex["gpu_us"] is None
    assert flex["eager_us"] > 0 and flex["error"] < 1e-5, "the block mask gives SDPA's output (fp32, no mask here)"
    assert "flex(q, k, v)" in flex["code"] and "the first call of a shape compiles" in flex["code"]
    assert flex["first_call_s"] > 0, "the compile time apart, not in the code"


def test_no_advice_measures_nothing(tmp_path):
    proc, report = watch(tmp_path, sys.executable, str(PROGRAMS / "math_forced.py"))
    assert proc.returncode == 0, proc.stderr
    assert report["advice"] is None and report["calls"][0]["best"] is None
    assert "measuring the alternatives" not in proc.stderr


def test_a_mask_is_read_as_causal_only_when_it_is_exactly_what_is_causal_applies():
    import torch

    from sdpa_tui.watch.probe.explain.choice import mask_is_causal

    q, k = torch.randn(1, 2, 5, 8), torch.randn(1, 2, 7, 8)
    keep = torch.ones(5, 7, dtype=torch.bool).tril()
    assert mask_is_causal(keep, q, k) and mask_is_causal(keep.expand(1, 2, 5, 7), q, k)
    assert mask_is_causal(torch.zeros(5, 7).masked_fill(~keep, float("-inf")), q, k)
    assert not mask_is_causal(~keep, q, k)
    assert not mask_is_causal(torch.zeros(5, 7).masked_fill(~keep, -1e9), q, k), "-1e9 is not -inf: not equivalent"
    assert not mask_is_causal(keep[:, :6], q, k), "another shape"
    other = keep.clone()
    other[4, 0] = False  # one padded key
    assert not mask_is_causal(other, q, k)


def test_watch_measures_is_causal_for_a_causal_mask_passed_as_a_tensor(tmp_path):
    proc, report = watch(tmp_path, sys.executable, str(PROGRAMS / "causal_mask.py"), advice=True, timeout=600,
                         flex=False)
    assert proc.returncode == 0, proc.stderr
    (call,) = report["calls"]
    assert call["mask_causal"] is True and call["mask"]["kind"] == "bool"
    assert not any(a["leaves_sdpa"] for a in call["alternatives"]), "--no-flex: FlexAttention not measured"
    assert "FlexAttention" not in proc.stderr
    rewrite = next(a for a in call["alternatives"] if a["variant"] == "is_causal")
    assert "is_causal=True" in rewrite["code"]
    current = next(a for a in call["alternatives"] if a["variant"] == "backend" and a["backend"] == call["backend"])
    # both measured on the CPU's clock; which is faster is the host's to say (a busy CI box reorders them)
    assert rewrite["eager_us"] > 0 and current["eager_us"] > 0


def test_the_output_check_flags_only_the_site_fed_a_nan_and_changes_nothing(tmp_path):
    from support.watching import plain

    program = (sys.executable, str(PROGRAMS / "nonfinite_site.py"))
    proc, report = watch(tmp_path, *program, columns=250)
    assert proc.returncode == 0, proc.stderr
    by_len = {c["q_shape"][2]: c for c in report["calls"]}
    good, bad = by_len[32]["check"], by_len[48]["check"]
    assert good["ok"] is True and good["samples"] == 1 and good["max_rel_error"] < good["tolerance"]
    assert bad["ok"] is False and bad["nonfinite"] == 1 and bad["note"] == "the inputs already held NaN or Inf"
    flagged = [line for line in proc.stdout.splitlines() if line.startswith("OUTPUT CHECK FAILED")]
    assert len(flagged) == 1 and f"nonfinite_site.py:{BROKEN_LINE}" in flagged[0], proc.stdout
    assert proc.stdout.splitlines()[0] == plain(*program).splitlines()[0], "the program's own output is unchanged"


BROKEN_LINE = next(i for i, line in enumerate((PROGRAMS / "nonfinite_site.py").read_text().splitlines(), 1)
                   if line.strip().startswith("broken = "))
"""The line of the call site fed a NaN."""


@pytest.mark.cuda
def test_on_a_gpu_the_output_check_flags_only_the_site_fed_a_nan(tmp_path):
    proc, report = watch(tmp_path, sys.executable, str(PROGRAMS / "nonfinite_site.py"), "cuda", columns=250,
                         advice=False)
    assert proc.returncode == 0, proc.stderr
    by_len = {c["q_shape"][2]: c for c in report["calls"]}
    good, bad = by_len[32]["check"], by_len[48]["check"]
    assert good["ok"] is True and good["max_rel_error"] < good["tolerance"], good
    assert bad["ok"] is False and bad["nonfinite"] >= 1, bad
    flagged = [line for line in proc.stdout.splitlines() if line.startswith("OUTPUT CHECK FAILED")]
    assert len(flagged) == 1 and f"nonfinite_site.py:{BROKEN_LINE}" in flagged[0], proc.stdout


def test_the_calls_view_marks_a_failed_check_and_gives_its_evidence():
    from dataclasses import replace

    from sdpa_tui.core.calls.call_signature import CallSignature
    from sdpa_tui.core.calls.watch_report import build_report
    from sdpa_tui.core.calls.watched_calls import CallStats, OutputCheck, ProcessState
    from sdpa_tui.ui.watch.call_rows import CHECK_FAILED, check_lines, table_cells

    sig = CallSignature(q_shape=(1, 2, 48, 16), kv_shape=(1, 2, 48, 16), dtype="torch.float32", device="cpu",
                        mask="none", mask_shape=None, causal=False, dropout_p=0.0, scale=None, gqa=False, grad=False)
    bad = CallStats(sig, count=3, site="p.py:14", backend="FLASH_ATTENTION",
                    check=OutputCheck(samples=1, nonfinite=1, ok=False, note="the inputs already held NaN or Inf"))
    good = CallStats(replace(sig, q_shape=(1, 2, 32, 16), kv_shape=(1, 2, 32, 16)), count=3, site="p.py:13",
                     backend="FLASH_ATTENTION", check=OutputCheck(1, 0, 1e-7, 3e-7, 2e-3, True))
    report = build_report(["p.py"], 0, [ProcessState(pid=1, calls=[bad, good])], 1.0)
    rows = {r.signature.q_shape[2]: r for r in report.rows}
    assert table_cells(rows[48])["backend"].startswith(CHECK_FAILED)
    assert not table_cells(rows[32])["backend"].startswith(CHECK_FAILED)
    assert check_lines(rows[48]) == ["check   FAILED: 1 of 1 outputs held NaN or Inf (the inputs already held NaN or Inf)"]
    assert check_lines(rows[32]) == ["check   1 output(s) vs float64 MATH: max rel err 3.0e-07, within 2e-03"]


def test_the_output_checks_reference_leaves_the_process_wide_flags_alone(monkeypatch):
    """An ``sdpa_kernel([MATH])`` around the reference switched the other backends off for the whole process: a
    call of another thread meanwhile ran MATH and its result changed (concurrency.py, watched, in CI)."""
    import torch

    from sdpa_tui.core.calls.watched_calls import OutputCheck
    from sdpa_tui.watch.probe.checks import output_check

    seen = []
    real = output_check.reference

    def spying(*args):
        seen.append((torch.backends.cuda.flash_sdp_enabled(), torch.backends.cuda.mem_efficient_sdp_enabled()))
        return real(*args)

    monkeypatch.setattr(output_check, "reference", spying)
    q = torch.randn(1, 2, 16, 8)
    keep = torch.ones(16, 16, dtype=torch.bool).tril()
    check = OutputCheck()
    out = torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=keep)
    output_check.check_output(check, out, q, q, q, keep, 0.0, False, None, False)
    assert seen and set(seen) == {(True, True)}, seen  # one reference call per batch element's block
    assert check.ok is True and check.samples == 1 and check.max_rel_error < 1e-5, check


def test_rewrites_that_apply_are_measured_and_one_that_changes_numerics_is_never_best():
    from dataclasses import replace

    from sdpa_tui.core.calls.advice import Rewrite
    from sdpa_tui.core.calls.call_code import rewrite_codes
    from sdpa_tui.watch.advice.advise import rewritten

    gqa = Workload(heads=8, kv_heads=2, dtype="fp32", mask="padding")
    assert [v for v, _ in rewritten(True, gqa)] == ["is_causal", "expand_kv", "bf16"]
    assert dict(rewritten(True, gqa))["expand_kv"] == replace(gqa, kv_heads=8)
    call = CallSignature((2, 8, 512, 64), (2, 2, 512, 64), "torch.float32", "cpu", mask="bool", gqa=True)
    assert rewrite_codes(call, gqa)["expand_kv"] == ("out = F.scaled_dot_product_attention(q, k.repeat_interleave(4, "
                                                     "dim=-3), v.repeat_interleave(4, dim=-3), attn_mask=attn_mask)")
    assert rewritten(False, Workload(dtype="bf16")) == []
    math = lab({Backend.MATH: [100.0, 101, 99, 100, 102, 98]})
    faster_in_bf16 = lab({Backend.FLASH: [20.0, 21, 19, 20, 22, 18]})
    advice = advise(math, "MATH", rewrites=[Rewrite("bf16", "q, k, v = ...", faster_in_bf16, exact=False)])
    listed = next(a for a in advice.alternatives if a.variant == "bf16")
    assert listed.exact is False and listed.to_dict()["exact"] is False and listed.eager_us == 20.0
    assert advice.best is None, "a lower precision is listed with its error, never advised as the change to make"
    same_numerics = advise(math, "MATH", rewrites=[Rewrite("expand_kv", "k, v = ...", faster_in_bf16)])
    assert same_numerics.best.variant == "expand_kv" and same_numerics.saving_us_per_call == 80.0


def test_a_head_dim_the_fused_kernels_reject_is_padded_and_the_padded_call_gives_the_same_output():
    import torch
    import torch.nn.functional as F
    from support.advice_apply import apply_top_advice

    from sdpa_tui.core.calls.call_code import rewrite_codes
    from sdpa_tui.watch.advice.advise import rewritten

    odd = Workload(head_dim=100, dtype="bf16")
    assert dict(rewritten(False, odd))["pad_head_dim"].head_dim == 104
    assert "pad_head_dim" not in dict(rewritten(False, Workload(head_dim=96, dtype="bf16")))
    code = rewrite_codes(CallSignature((2, 8, 512, 100), (2, 8, 512, 100), "torch.bfloat16", "cpu"), odd)["pad_head_dim"]
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 40, 100, dtype=torch.float64) for _ in range(3))
    program = apply_top_advice("out = F.scaled_dot_product_attention(q, k, v)\n",
                               {"variant": "pad_head_dim", "code": code})
    scope = {"F": F, "q": q, "k": k, "v": v}
    exec(program, scope)  # the line as the user would paste it
    assert scope["out"].shape == q.shape
    torch.testing.assert_close(scope["out"], F.scaled_dot_product_attention(q, k, v), rtol=1e-12, atol=1e-12)


def test_a_compiled_call_is_measured_not_advised_and_the_cost_of_the_graphs_other_pick_is_said():
    """pytorch#177712: the compiled graph ran Mem-efficient where eager SDPA picks Flash for the same arguments."""
    from sdpa_tui.core.calls.advice import compiled_advice

    session = lab({Backend.MATH: [100.0, 101, 99, 100, 102, 98], Backend.FLASH: [40.0, 41, 39, 40, 42, 38]})
    measured = advise(session, "MATH")
    assert measured.best is not None, "eager, it would be advised"
    advice = compiled_advice(measured, "FLASH_ATTENTION")
    assert advice.best is None and advice.saving_us_per_call is None
    assert advice.alternatives == measured.alternatives, "the alternatives stay listed with their times"
    assert "the graph runs MATH, eager SDPA picks FLASH_ATTENTION for the same arguments" in advice.note
    assert advice.note.endswith("100.0 against 40.0 µs, +60.0 µs a call")
    assert run_advice([("compiled", 10, advice)]).top == [], "nothing compiled among the changes to make"
    same = compiled_advice(measured, "MATH")
    assert same.note == "compiled: measured, not advised (a change inside a compiled graph is not measured here)"


def test_a_calls_mask_form_is_read_as_an_alternative_needs_it():
    """Issue 36, item 5: transformers' causal mask with padding was measured and coded as key padding alone."""
    import torch

    from sdpa_tui.core.calls.mask_forms import CAUSAL, CAUSAL_KEY_PADDING, KEY_PADDING, NONE, OTHER
    from sdpa_tui.watch.probe.explain.choice import mask_form

    q, k = torch.randn(2, 4, 6, 8), torch.randn(2, 2, 6, 8)
    key_keep = torch.ones(2, 6, dtype=torch.bool)
    key_keep[0, 4:] = False  # right padding
    key_keep[1, :2] = False  # left padding: its first query rows keep no key
    triangle = torch.ones(6, 6, dtype=torch.bool).tril()
    both = triangle & key_keep[:, None, None, :]
    lowest = torch.finfo(torch.float32).min
    assert mask_form(None, q, k, False) == NONE and mask_form(None, q, k, True) == CAUSAL
    assert mask_form(key_keep[:, None, None, :], q, k, False) == KEY_PADDING
    assert mask_form(both, q, k, False) == CAUSAL_KEY_PADDING
    assert mask_form(torch.zeros(both.shape).masked_fill(~both, lowest), q, k, False) == CAUSAL_KEY_PADDING, \
        "transformers' float mask: 0 where kept, the dtype's lowest where not"
    assert mask_form(triangle, q, k, False) == CAUSAL
    per_head = both.expand(2, 4, 6, 6).clone()
    per_head[0, 1, 5, 0] = False
    assert mask_form(per_head, q, k, False) == OTHER, "differs between heads"
    assert mask_form(torch.ones(6, 6, dtype=torch.bool).triu(), q, k, False) == OTHER
    assert mask_form(torch.randn(2, 1, 6, 6), q, k, False) == OTHER, "an additive bias"
    assert mask_form(key_keep[:, None, None, :], q, k, True) == OTHER, "a mask and is_causal together"


def test_the_alternatives_are_measured_within_a_budget_and_say_where_they_stand(tmp_path):
    """Issue 36, item 6: a 5.5 s program waited 38.3 s for its alternatives with one line on stderr. Here 5 signatures
    and their rewrites get 2 s: each signature's own workload goes first; what was left is said; stderr (a pipe
    here) has one line per step: signature i of n, and the time left of the budget."""
    import re

    proc, report = watch(tmp_path, sys.executable, str(PROGRAMS / "shapes.py"), advice=True, flex=False, budget=2,
                         timeout=600)
    assert proc.returncode == 0, proc.stderr
    note = report["advice"]["note"]
    assert "of a 2 s budget" in note and "the budget of 2 s ran out on cpu before" in note, note
    assert "(--advice-budget SECONDS gives more)" in note
    said = proc.stderr.replace("\n    ", " ")  # a step's line wrapped at the width (80 on a pipe) is one step
    steps = [line for line in said.splitlines() if "measuring alternatives " in line]
    assert all(len(line) <= 80 for line in proc.stderr.splitlines() if line.startswith(("sdpa-tui", "    "))), \
        proc.stderr
    assert steps and re.search(r"measuring alternatives 1/5, \d+ s left: .+$", steps[0]), steps
    assert len(steps) == len({re.sub(r", \d+ s left:", "", s) for s in steps}), "a line per step"
    assert "\r" not in proc.stderr, "no in-place redrawing on a pipe"
    assert report["calls"][0]["alternatives"], "the busiest signature's own workload first"
    left = re.search(r"before (\d+) signature\(s\)", note)
    unmeasured = sum(not c["alternatives"] for c in report["calls"])
    assert unmeasured == (int(left.group(1)) if left else 0) and "rewrite(s) were measured" in note, note


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as stderr in one is."""

    def isatty(self) -> bool:
        return True


def test_progress_is_redrawn_in_place_on_a_terminal_and_cleared_at_the_end(monkeypatch):
    import os

    from sdpa_tui.core.calls.advice import AdviceProgress
    from sdpa_tui.watch.advice.advice_progress import StderrProgress

    monkeypatch.setattr("shutil.get_terminal_size", lambda fallback=None: os.terminal_size((120, 40)))
    screen = Terminal()
    progress = StderrProgress(screen)
    progress(AdviceProgress(1, 3, "SDPA backends at [1, 8, 512, 64] fp32", 9.6))
    progress(AdviceProgress(2, 3, "SDPA backends at [1, 8, 1024, 64] fp32", 7.2))
    progress.say("sdpa-tui watch: measuring FlexAttention (compiled) at 1 workload(s)")
    progress.clear()
    text = screen.getvalue()
    assert "\r\x1b[Ksdpa-tui watch: measuring alternatives 1/3, 10 s left: SDPA backends at [1, 8, 512, 64] " \
           "fp32" in text
    assert "\r\x1b[Ksdpa-tui watch: measuring alternatives 2/3, 7 s left" in text
    assert text.endswith("\r\x1b[Ksdpa-tui watch: measuring FlexAttention (compiled) at 1 workload(s)\n"), \
        "a message clears the progress line first; nothing is left drawn at the end"
    piped = io.StringIO()
    progress = StderrProgress(piped)
    for left in (9.0, 8.5, 8.0):  # one step, redrawn on a terminal: one line on a pipe
        progress(AdviceProgress(1, 3, "SDPA backends", left))
    assert piped.getvalue() == "sdpa-tui watch: measuring alternatives 1/3, 9 s left: SDPA backends\n"


def test_the_default_budget_is_a_few_seconds_or_a_quarter_of_the_programs_run():
    from sdpa_tui.watch.advice.advise import default_budget_s

    assert default_budget_s(5.5) == 10.0 and default_budget_s(400.0) == 100.0


def test_a_progress_line_wider_than_the_terminal_is_cut_to_it_so_it_can_be_redrawn(monkeypatch):
    import os

    from sdpa_tui.core.calls.advice import AdviceProgress
    from sdpa_tui.watch.advice.advice_progress import StderrProgress

    monkeypatch.setattr("shutil.get_terminal_size", lambda fallback=None: os.terminal_size((80, 24)))
    screen = Terminal()
    StderrProgress(screen)(AdviceProgress(1, 3, "FlexAttention: its code run, compared with the call's output, timed",
                                          5.0))
    drawn = screen.getvalue().removeprefix("\r\x1b[K")
    assert len(drawn) == 79 and drawn.startswith("sdpa-tui watch: measuring alternatives 1/3, 5 s left: ") \
        and drawn.endswith("…")


def test_on_a_pipe_a_step_wider_than_the_terminal_is_wrapped_not_cut(monkeypatch):
    import os

    from sdpa_tui.core.calls.advice import AdviceProgress
    from sdpa_tui.watch.advice.advice_progress import StderrProgress

    monkeypatch.setattr("shutil.get_terminal_size", lambda fallback=None: os.terminal_size((80, 24)))
    piped = io.StringIO()
    progress = StderrProgress(piped)
    progress(AdviceProgress(1, 1, "rewrite pad_head_dim at [1, 8, 128, 24] fp32 kv heads 2, padding", 22.0))
    progress.say("sdpa-tui watch: running the advice's code against 3 call(s) before it is offered")
    lines = piped.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines) and lines[1].startswith("    "), lines
    assert " ".join(line.strip() for line in lines[:2]) == ("sdpa-tui watch: measuring alternatives 1/1, 22 s left: "
                                                            "rewrite pad_head_dim at [1, 8, 128, 24] fp32 kv heads 2, "
                                                            "padding")
