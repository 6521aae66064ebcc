"""watch's gradient check on the CPU: the float64 reference against autograd, a clean training call, an upstream
NaN blamed upstream, a backward that overflows flagged with its repro replayed, and bad --inputs folders."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from support.op_kinds import OpKinds
from support.paths import REPO
from support.watching import ENV, watch

from sdpa_tui.watch.probe.checks import gradient_reference, output_check

pytestmark = pytest.mark.torch_range

PROGRAM = {
    "clean": "q = torch.randn(2, 4, 32, 16, requires_grad=True); k = torch.randn(2, 4, 32, 16, requires_grad=True)\n"
             "v = torch.randn(2, 4, 32, 16, requires_grad=True)\n"
             "for _ in range(40):\n    F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()\n",
    "upstream": "q, k, v = (torch.randn(1, 2, 16, 8, requires_grad=True) for _ in range(3))\n"
                "out = F.scaled_dot_product_attention(q, k, v)\ng = torch.ones_like(out); g[0, 0, 3, 1] = float('nan')\n"
                "out.backward(g)\n",
    "overflow": "q, k = (torch.randn(1, 2, 64, 32, dtype=torch.float16, requires_grad=True) for _ in range(2))\n"
                "v = (torch.randn(1, 2, 64, 32) * 30).half().requires_grad_()\n"
                "out = F.scaled_dot_product_attention(q, k, v)\nout.backward(torch.full_like(out, 3e4))\n",
}


def run(tmp_path, name, fail_on_nonfinite=False):
    program = tmp_path / f"{name}.py"
    program.write_text("import torch, torch.nn.functional as F\ntorch.manual_seed(0)\n" + PROGRAM[name])
    if not fail_on_nonfinite:
        return watch(tmp_path, sys.executable, str(program))
    report = tmp_path / "calls.json"
    proc = subprocess.run([sys.executable, "-m", "sdpa_tui", "watch", "--report", str(report), "--no-advice",
                           "--fail-on-nonfinite", "--", sys.executable, str(program)], capture_output=True, text=True,
                          timeout=240, cwd=REPO, stdin=subprocess.DEVNULL, env=ENV)
    return proc, json.loads(report.read_text())


@pytest.mark.parametrize("mask_kind", ["none", "bool", "float", "causal"])
@pytest.mark.parametrize("gqa", [False, True])
@pytest.mark.parametrize("band_bytes", [None, 16 * 8 * 40])
def test_the_float64_reference_is_autograds_gradient(monkeypatch, mask_kind, gqa, band_bytes):
    if band_bytes:
        monkeypatch.setitem(output_check.BLOCK_BYTES, "cpu", band_bytes)
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 24, 8, dtype=torch.float64, generator=gen, requires_grad=True)
    k, v = (torch.randn(2, 2 if gqa else 4, 24, 8, dtype=torch.float64, generator=gen, requires_grad=True)
            for _ in range(2))
    mask = {"none": None, "causal": None, "bool": torch.rand(2, 1, 24, 24, generator=gen) > 0.3,
            "float": torch.randn(24, 24, dtype=torch.float64, generator=gen)}[mask_kind]
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask_kind == "causal", enable_gqa=gqa)
    grad_out = torch.randn(out.shape, dtype=torch.float64, generator=gen)
    expected = torch.autograd.grad(out, (q, k, v), grad_out)
    got = gradient_reference.reference_gradients(q, k, v, mask, mask_kind == "causal", None, gqa, grad_out)
    for (value, magnitude), want in zip(got[:3], expected):
        assert torch.allclose(value, want, atol=1e-12)
        assert bool((magnitude >= value.abs() - 1e-12).all())


@pytest.mark.parametrize("mask_kind", ["none", "causal", "bool"])
def test_an_error_is_the_largest_difference_over_the_largest_magnitude(mask_kind):
    """Each gradient's error, read back once for the three: max |grad - ref| / max magnitude, against the reference
    of the same call (float32 gradients of a float64 reference)."""
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 4, 24, 8, generator=gen, requires_grad=True) for _ in range(3))
    mask = torch.rand(2, 1, 24, 24, generator=gen) > 0.3 if mask_kind == "bool" else None
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask_kind == "causal")
    grad_out = torch.randn(out.shape, generator=gen)
    grads = torch.autograd.grad(out, (q, k, v), grad_out)
    ref = gradient_reference.reference_gradients(q, k, v, mask, mask_kind == "causal", None, False, grad_out)
    assert (ref[3] is None) == (mask is None), "rows that lose every key are tracked only under a mask"
    errors = gradient_reference.errors_against(grads, ref)
    for name, grad, (value, magnitude) in zip(("dq", "dk", "dv"), grads, ref[:3]):
        expected = float((grad.double() - value).abs().max() / magnitude.max())
        assert errors[name] == pytest.approx(expected, rel=1e-12)
        assert 0 < errors[name] < 5e-3


@pytest.mark.parametrize("upstream_on_padding", [False, True])
def test_queries_with_no_key_leave_dq_out_and_dk_dv_when_they_got_a_gradient(upstream_on_padding):
    """Left padding under a causal mask: sequence 0's first 5 queries see no key. Their dq is not compared, and dk
    and dv are not either once the upstream gradient on those rows is not zero (what a backend writes there is its
    own; here 0.5 is written in dq's rows)."""
    gen = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(2, 2, 16, 8, dtype=torch.float64, generator=gen) for _ in range(3))
    keep = torch.ones(2, 1, 16, 16, dtype=torch.bool).tril()
    keep[0, :, :, :5] = False
    grad_out = torch.randn(2, 2, 16, 8, dtype=torch.float64, generator=gen)
    if not upstream_on_padding:
        grad_out[0, :, :5] = 0
    ref = gradient_reference.reference_gradients(q, k, v, keep, False, None, False, grad_out)
    dq, dk, dv = (r[0].clone() for r in ref[:3])
    dq[0, :, :5] = 0.5
    errors = gradient_reference.errors_against((dq, dk, dv), ref)
    assert errors["dq"] == 0.0
    assert set(errors) == ({"dq"} if upstream_on_padding else {"dq", "dk", "dv"})


def test_a_clean_training_call_gets_finite_errors_and_ok(tmp_path):
    proc, report = run(tmp_path, "clean")
    assert proc.returncode == 0, proc.stderr
    backward = report["calls"][0]["check"]["backward"]
    assert backward["ok"] is True and backward["samples"] == 32 and backward["compared"] == 1
    assert set(backward["max_rel_error"]) == {"dq", "dk", "dv"}
    assert max(backward["max_rel_error"].values()) < backward["tolerance"] == 5e-3


def test_an_upstream_nan_is_blamed_upstream_not_on_the_backend(tmp_path):
    proc, report = run(tmp_path, "upstream", fail_on_nonfinite=True)
    backward = report["calls"][0]["check"]["backward"]
    assert backward["blame"] == "the gradient arriving from upstream already held NaN or Inf"
    assert backward["ok"] is True and not backward["nonfinite"] and not backward["repro"]
    assert proc.returncode == 4 and "gradients non-finite (the gradient arriving from upstream" in proc.stderr


def test_a_backward_that_overflows_is_flagged_saved_and_replayed(tmp_path):
    proc, report = run(tmp_path, "overflow", fail_on_nonfinite=True)
    assert proc.returncode == 4, proc.stderr
    backward = report["calls"][0]["check"]["backward"]
    assert backward["ok"] is False and backward["blame"] == "the backend's backward"
    assert backward["first_bad"]["dq"] == 4096 and backward["elements"]["dq"] == 4096
    assert {r["backend"]: r["result"] for r in backward["replays"]} == {"FLASH_ATTENTION": "non-finite",
                                                                          "MATH": "non-finite"}
    assert "GRADIENT CHECK FAILED" in proc.stdout
    script = subprocess.run([sys.executable, f"{backward['repro']}/repro.py"], capture_output=True, text=True,
                            timeout=120, check=True).stdout
    assert "FLASH_ATTENTION       non-finite: dq 4,096 of 4,096" in script
    inputs = subprocess.run([sys.executable, "-m", "sdpa_tui", "report", "--inputs", backward["repro"]],
                            capture_output=True, text=True, timeout=120, env=ENV, cwd=REPO)
    assert inputs.returncode == 0 and "non-finite" in inputs.stdout and "dq 4,096 of" in inputs.stdout
    json.dumps(report)


@pytest.mark.parametrize("case", ["missing", "not a repro", "unreadable", "wrong shapes"])
def test_report_inputs_of_a_folder_that_is_not_a_call_is_one_line_and_exit_2(tmp_path, case):
    folder = tmp_path / "call"
    if case != "missing":
        folder.mkdir()
    if case == "unreadable":
        (folder / "call.pt").write_text("not a tensor file")
    if case == "wrong shapes":
        t = torch.randn(1, 2, 8, 4)
        torch.save({"format": "sdpa-tui-call/1", "device": "cpu", "q": t, "k": torch.randn(1, 2, 8, 5), "v": t,
                    "attn_mask": None, "grad_out": t, "dropout_p": 0.0, "is_causal": False, "scale": None,
                    "enable_gqa": False, "strides": {}}, folder / "call.pt")
    proc = subprocess.run([sys.executable, "-m", "sdpa_tui", "report", "--inputs", str(folder)], capture_output=True,
                          text=True, timeout=120, env=ENV, cwd=REPO)
    assert proc.returncode == 2
    assert proc.stderr.startswith("sdpa-tui: error: ") and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stdout == ""


def test_a_second_backward_through_a_sampled_call_gives_the_gradients_it_gives_unwatched():
    """``backward(retain_graph=True)`` then another backward through the same graph: the sentinel's tap ran its
    sample's backward a second time and raised AttributeError into the program."""
    from sdpa_tui.watch.probe.fast_path import make_wrapper
    from sdpa_tui.watch.probe.slow_path import Probe

    probe = Probe(None, kernel_bursts=False)
    sdpa = make_wrapper(F.scaled_dot_product_attention, probe)
    x = torch.randn(1, 2, 8, 4, requires_grad=True)
    try:
        out = sdpa(x, x, x)
        out.sum().backward(retain_graph=True)
        once = x.grad.clone()
        out.sum().backward()
        assert torch.allclose(x.grad, 2 * once)
    finally:
        probe._stop.set()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32, torch.float64])
def test_the_sentinel_counts_every_nan_and_inf_and_nothing_finite(dtype):
    """Each tensor's count is its NaN and ±Inf elements, as ``isfinite`` counts them: none of the finite extremes
    (the dtype's largest and smallest magnitudes, subnormals, -0.0), and 0 for a gradient the backward did not make."""
    from sdpa_tui.watch.probe.checks.gradient_sentinel import CallTensors, nonfinite_counts

    info = torch.finfo(dtype)
    extremes = torch.tensor([info.max, -info.max, info.tiny, info.tiny / 4, -0.0, 0.0, 1.0], dtype=dtype)
    gen = torch.Generator().manual_seed(0)

    def with_bad(n_nan: int, n_inf: int) -> torch.Tensor:
        x = torch.cat([torch.randn(60, generator=gen).to(dtype), extremes])
        x[:n_nan] = float("nan")
        x[n_nan:n_nan + n_inf] = float("inf") if n_inf % 2 else -float("inf")
        return x.view(1, 1, -1, 1)

    tensors = CallTensors(with_bad(0, 0), with_bad(1, 0), with_bad(0, 2), None, 0.0, True, None, False,
                          grad_out=with_bad(3, 1), grads=(with_bad(2, 3), None, with_bad(0, 0)))
    kinds = OpKinds()
    with kinds:
        counts = nonfinite_counts(tensors).tolist()
    expected = [int((~torch.isfinite(x)).sum()) if x is not None else 0
                for x in (*tensors.grads, tensors.grad_out, tensors.q, tensors.k, tensors.v)]
    assert counts == expected == [5, 0, 0, 4, 0, 1, 2]
    # few kinds of ops, each loaded once on a GPU at the program's first sampled backward: no isfinite pass
    assert kinds.names <= {"sub", "ne", "sum", "stack", "new_zeros", "zeros"}, sorted(kinds.names)
