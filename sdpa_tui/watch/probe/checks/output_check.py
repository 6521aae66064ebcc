"""A sampled check of a watched program's SDPA outputs: the call's output against SDPA in float64 with MATH on
copies of the same inputs, at a signature's first call and then every ``CHECK_EVERY``-th, at most ``MAX_CHECKS``
times (one due while a profiler window records runs once the window has stopped: ``held_checks.py``). A NaN or
Inf in the output is flagged at once. The reference is computed in blocks (a batch element, the
query heads of one key/value head, a band of query rows) of at most ``BLOCK_BYTES`` of float64 scores, so a real
shape is checked without the float64 score matrix of the whole call in memory. Query rows whose every key is
masked are not compared: backends disagree there (float64 MATH writes 0; cuDNN wrote values up to 0.19 on the
H100, docs/lab-notes/watch-truth.md), and the check says how many there were and the largest value written on them.

The program's results never change: its output tensor is returned untouched and the reference is computed on
detached float64 copies, under ``no_grad``. A call with dropout is not checked (its random mask cannot be
reproduced without drawing from the program's random stream), and said so; a call whose reference would compute
more than ``MAX_SCORES`` scores on its device is not either, nor one made while a CUDA graph is being captured
(its next sampled call is).
"""

from __future__ import annotations

import torch

from ....core.calls.watched_calls import OUTPUT_TOLERANCE as TOLERANCE  # the tolerance of the dtype of the call checked
from ....core.calls.watched_calls import OutputCheck

CHECK_EVERY = 4096  # a power of two, a multiple of the probe's TIME_EVERY: these calls take its sampled path
MAX_CHECKS = 8
BLOCK_BYTES = {"cuda": 256 << 20, "cpu": 64 << 20}  # float64 scores and their softmax, per block of the reference
MAX_SCORES = {"cuda": 1 << 33, "cpu": 1 << 25}
"""The most query-key scores one check computes: float64 runs at a fraction of a GPU's low-precision rate and
far slower on a CPU (watch_check_cost.py measures what a check costs; docs/lab-notes/watch-truth.md)."""


def due(count: int, check: OutputCheck, owed: bool = False) -> bool:
    """Is this call (the signature's ``count``-th) checked? ``owed``: a check held for a window could not run (its
    tensors changed first, ``held_checks.py``), so this call is."""
    return (owed or count == 1 or not count & (CHECK_EVERY - 1)) and check.samples < MAX_CHECKS and not check.note


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


SCORE_BYTES = 16
"""Bytes a block holds per query-key score: float64 scores and their softmax."""


def blocks(q, k, gqa, score_bytes: int = SCORE_BYTES):
    """(batch elements, query heads, key/value heads, query rows) of each block of a 4-d call's reference: as many
    batch elements as fit in ``BLOCK_BYTES`` at ``score_bytes`` a score, else as many key/value heads (with their
    query heads) of one, else bands of query rows of one head (few large blocks: each block is a dozen float64
    kernels, or thirty for the gradients)."""
    batch, heads, rows, _ = q.shape
    kv_heads = k.shape[-3] if gqa else heads
    group = heads // kv_heads
    budget = BLOCK_BYTES.get(q.device.type, BLOCK_BYTES["cpu"])
    per_head = score_bytes * group * rows * k.shape[-2]  # the block's float64 arrays for one key/value head
    if per_head * kv_heads <= budget:
        step = max(1, budget // (per_head * kv_heads))
        for b in range(0, batch, step):
            yield slice(b, min(batch, b + step)), slice(0, heads), slice(0, kv_heads), slice(0, rows)
        return
    if per_head <= budget:
        step = budget // per_head
        for b in range(batch):
            for h in range(0, kv_heads, step):
                stop = min(kv_heads, h + step)
                yield slice(b, b + 1), slice(h * group, stop * group), slice(h, stop), slice(0, rows)
        return
    step = max(1, budget // (score_bytes * group * k.shape[-2]))
    for b in range(batch):
        for h in range(kv_heads):
            for r0 in range(0, rows, step):
                yield slice(b, b + 1), slice(h * group, (h + 1) * group), slice(h, h + 1), slice(r0, min(rows, r0 + step))


def block_mask(mask, causal, b, heads, rows, keys, device):
    """The block's part of the call's mask (3-d: heads, rows, keys; dimensions of 1 where it broadcasts), or for
    ``is_causal`` the rows' part of torch's top-left causal mask."""
    if causal:
        return torch.ones(rows.stop - rows.start, keys, dtype=torch.bool, device=device).tril(rows.start)
    if mask is None:
        return None
    full = mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape))
    return full[b if full.shape[0] > 1 else 0,
                heads if full.shape[1] > 1 else slice(0, 1),
                rows if full.shape[2] > 1 else slice(0, 1)]


class _Comparison:
    """max |out - ref| and max |ref| over the compared rows, and the rows whose every key was masked; kept on the
    device until the end (one wait for the GPU per check, not one per block)."""

    def __init__(self, device) -> None:
        self.error, self.size, self.masked_max, self.masked = (torch.zeros((), dtype=torch.float64, device=device)
                                                               for _ in range(4))

    def add(self, out, ref, mask) -> None:
        diff = (out.detach().double() - ref).abs().amax(-1)
        self.size = torch.maximum(self.size, ref.abs().max())
        if mask is None or mask.shape[-1] == 0:
            self.error = torch.maximum(self.error, diff.max())
            return
        dead = ~(mask if mask.dtype == torch.bool else mask > float("-inf")).any(-1)
        dead = dead.expand(diff.shape)
        self.error = torch.maximum(self.error, diff.masked_fill(dead, 0).max())
        self.masked_max = torch.maximum(self.masked_max, out.detach().double().abs().amax(-1).masked_fill(~dead, 0).max())
        self.masked = self.masked + dead.sum()

    def result(self) -> tuple[float, float, int, float]:
        error, size, masked, masked_max = torch.stack([self.error, self.size, self.masked, self.masked_max]).tolist()
        return error, size, int(masked), masked_max


def reference_error(out, q, k, v, mask, causal, scale, gqa) -> tuple[float, float, int, float]:
    """max |out - ref| over the rows with a key to attend to, max |ref|, how many query rows had every key masked,
    and the largest |out| on them; ``ref`` computed block by block."""
    seen = _Comparison(q.device)
    if q.dim() != 4 or k.dim() != 4 or (gqa and q.shape[1] % k.shape[1]):
        seen.add(out, reference(q, k, v, mask, causal, scale, gqa), None if causal else mask)
        return seen.result()
    for b, heads, kv_heads, rows in blocks(q, k, gqa):
        kv = kv_heads if gqa else heads
        part = block_mask(mask, causal, b, heads, rows, k.shape[-2], q.device)
        ref = reference(q[b, heads, rows], k[b, kv], v[b, kv], part, False, scale, gqa)
        seen.add(out[b, heads, rows], ref, part)
    return seen.result()


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
        scores = q.numel() // max(q.shape[-1], 1) * k.shape[-2]
        if scores > MAX_SCORES.get(q.device.type, MAX_SCORES["cpu"]):
            check.note = f"not checked: the float64 reference would compute {scores:,} scores"
            return
        with torch.no_grad():
            error, size, masked, masked_max = reference_error(out, q, k, v, mask, causal, scale, gqa)
        check.samples += 1
        if masked:
            check.masked_rows = max(check.masked_rows, masked)
            check.masked_rows_max = max(check.masked_rows_max or 0.0, masked_max)
        check.max_abs_error = max(check.max_abs_error or 0.0, error)
        rel = error / size if size else 0.0
        check.max_rel_error = max(check.max_rel_error or 0.0, rel)
        check.tolerance = TOLERANCE.get(str(q.dtype), 3e-2)
        check.ok = check.ok is not False and rel <= check.tolerance
    except Exception as exc:  # noqa: BLE001 - a check that cannot run is said, never the program's problem
        check.note = f"not checked: {type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
