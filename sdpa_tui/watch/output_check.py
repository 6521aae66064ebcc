"""A sampled check of a watched program's SDPA outputs: the call's output against SDPA in float64 with MATH on
copies of the same inputs, at a signature's first call and then every ``CHECK_EVERY``-th, at most ``MAX_CHECKS``
times. A NaN or Inf in the output is flagged at once.

The program's results never change: its output tensor is returned untouched and the reference is computed on
detached float64 copies, under ``no_grad``. A call with dropout is not checked (its random mask cannot be
reproduced without drawing from the program's random stream), and said so; a call whose float64 reference
would need more than ``MAX_REFERENCE_BYTES`` is not either, nor one made while a CUDA graph is being captured
(its next sampled call is).
"""

from __future__ import annotations

import torch

from ..core.watched_calls import OutputCheck

CHECK_EVERY = 4096  # a power of two, a multiple of the probe's TIME_EVERY: these calls take its sampled path
MAX_CHECKS = 8
MAX_REFERENCE_BYTES = 256 << 20
TOLERANCE = {"torch.float16": 5e-3, "torch.bfloat16": 3e-2, "torch.float32": 2e-3, "torch.float64": 1e-10}
"""Largest max |out - ref| / max |ref| that passes: above the lab's measured errors of every backend at the
dtype (H100, torch 2.11, tests/fixtures/reports/h100-torch2.11: fp16 at most 3.3e-4 in report-small.json, bf16
at most 1.9e-3 in report-8k.json; fp32 leaves room for TF32 matmuls in MATH on a GPU)."""


def due(count: int, check: OutputCheck) -> bool:
    return (count == 1 or not count & (CHECK_EVERY - 1)) and check.samples < MAX_CHECKS and not check.note


def reference(q, k, v, mask, causal, scale, gqa):
    """SDPA in float64 by torch's MATH kernel, called as an op: ``sdpa_kernel([MATH])`` would switch the other
    backends off for the whole process, and another thread's call meanwhile would run MATH (its result changed:
    seen in ``tests/watch_programs/concurrency.py``); nor is it the watch's wrapper, so no call of the program's."""
    q, k, v = (t.detach().double() for t in (q, k, v))
    if mask is not None and mask.dtype == torch.bool:  # as SDPA converts a boolean mask before its kernels
        mask = torch.zeros(mask.shape, dtype=torch.float64, device=mask.device).masked_fill(~mask, float("-inf"))
    elif mask is not None:
        mask = mask.detach().double()
    return torch.ops.aten._scaled_dot_product_attention_math(q, k, v, mask, 0.0, causal, scale=scale,
                                                             enable_gqa=gqa)[0]


def check_output(check: OutputCheck, out, q, k, v, mask, dropout_p, causal, scale, gqa) -> None:
    """Compare ``out`` with float64 MATH on copies of the inputs; record the result in ``check``."""
    try:
        if not isinstance(out, torch.Tensor):
            return
        if out.is_cuda and torch.cuda.is_current_stream_capturing():  # a sync would invalidate the program's graph
            return
        if not bool(torch.isfinite(out).all()):
            inputs_finite = all(bool(torch.isfinite(t).all()) for t in (q, k, v))
            check.nonfinite += 1
            check.samples += 1
            check.ok = False
            if not inputs_finite:
                check.note = check.note or "the inputs already held NaN or Inf"
            return
        if dropout_p:
            check.note = "dropout: not checked (its random mask would draw from the program's random stream)"
            return
        need = 8 * q.numel() // max(q.shape[-1], 1) * k.shape[-2] * 2  # float64 scores and their softmax
        if need > MAX_REFERENCE_BYTES:
            check.note = f"not checked: the float64 reference would need {need >> 20} MiB"
            return
        with torch.no_grad():
            ref = reference(q, k, v, mask, causal, scale, gqa)
            error = float((out.detach().double() - ref).abs().max())
            size = float(ref.abs().max())
        check.samples += 1
        check.max_abs_error = max(check.max_abs_error or 0.0, error)
        rel = error / size if size else 0.0
        check.max_rel_error = max(check.max_rel_error or 0.0, rel)
        check.tolerance = TOLERANCE.get(str(q.dtype), 3e-2)
        check.ok = check.ok is not False and rel <= check.tolerance
    except Exception as exc:  # noqa: BLE001 - a check that cannot run is said, never the program's problem
        check.note = f"not checked: {type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
