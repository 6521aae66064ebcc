"""A sampled check of a watched program's SDPA outputs: the call's output against SDPA in float64 on copies of the
same inputs, computed as torch's MATH backend computes it (from the attention equations: :func:`reference`; "float64
MATH" in the report), at a signature's first call and then every ``CHECK_EVERY``-th, at most ``MAX_CHECKS``
times (one due while a profiler window records runs once the window has stopped: ``held_checks.py``). A NaN or
Inf in the output is flagged at once. The reference is computed in blocks (a batch element, the
query heads of one key/value head, a band of query rows) of at most ``BLOCK_BYTES`` of float64 scores, so a real
shape is checked without the float64 score matrix of the whole call in memory. Query rows whose every key is
masked are not compared: backends disagree there (float64 MATH writes 0; cuDNN wrote values up to 0.19 on the
H100, docs/lab-notes/watch-truth.md), and the check says how many there were and the largest value written on them.

The check uses few kinds of ops: on a GPU each op new to the process loads its kernels the first time it runs (30
to 120 ms an op on an H200, paid once per process on the program's thread), so a causal block's mask is added as
float64 (no boolean ops), the reference uses the gradient comparison's own ops (torch's MATH op also looks for
rows with every key masked on every call), a NaN or Inf in a checked output is read from the comparison's own maximum
(no ``isfinite`` pass), and the blocks' results are reduced on the host.

The program's results never change: its output tensor is returned untouched and the reference is computed on
detached float64 copies, under ``no_grad``. A call with dropout is not checked (its random mask cannot be
reproduced without drawing from the program's random stream), and said so; a call whose reference would compute
more than ``MAX_SCORES`` scores on its device is not either, nor one made while a CUDA graph is being captured
(its next sampled call is).
"""

from __future__ import annotations

import math
from typing import NamedTuple

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


def by_query_head(t: torch.Tensor, group: int) -> torch.Tensor:
    """Key or value heads repeated for their ``group`` query heads each (the heads' dimension, -3), as
    ``enable_gqa`` shares them."""
    return t if group == 1 else t.repeat_interleave(group, dim=-3)


def probabilities(q, k, mask, scale, masking):
    """``P = softmax(scale * Q Kᵀ + mask)`` in float64 from float64 ``q`` and ``k`` (k's heads already matched to q's),
    ``mask`` added (float) or applied (boolean: False masks), and the query rows whose every key is masked (``dead``,
    keepdim) where ``masking``: those rows' P is 0, as torch's MATH backend writes. Without ``masking`` (no mask, or
    torch's top-left causal one: every row keeps a key) no op is spent on them and ``dead`` is None: plain softmax is
    exact there, and each op new to the process loads its kernels on a GPU."""
    s = torch.matmul(q, k.transpose(-1, -2)).mul_(scale)
    if mask is not None:
        s = s.masked_fill_(~mask, float("-inf")) if mask.dtype == torch.bool else s.add_(mask.double())
    if not masking:
        return torch.softmax(s, -1), None
    dead = torch.isneginf(s).all(-1, keepdim=True)
    return torch.softmax(s.masked_fill_(dead, 0.0), -1).masked_fill_(dead, 0.0), dead


def reference(q, k, v, mask, causal, scale, gqa, first_row=0):
    """SDPA in float64 on detached copies of the inputs, from its equations (:func:`probabilities`, then ``P V``), and
    the query rows whose every key is masked (None without an explicit mask); ``causal`` the top-left causal mask of
    rows from ``first_row`` on (a band of a call's rows: ``blocks``): the ops the gradient comparison uses too
    (``gradient_reference.py``), so the two checks load few kernels between them; torch's MATH op runs more (its safe
    softmax looks for dead rows on every call). Neither
    ``sdpa_kernel([MATH])``, which would switch the other backends off for the whole process (another thread's call
    meanwhile would run MATH, its result changed: seen in ``tests/watch_programs/concurrency.py``), nor the watch's
    wrapper, so no call of the program's."""
    q, k, v = (t.detach().double() for t in (q, k, v))
    group = 1
    if gqa and q.dim() >= 3:
        if q.shape[-3] % k.shape[-3]:
            raise ValueError(f"{q.shape[-3]} query heads are not a multiple of {k.shape[-3]} key/value heads")
        group = q.shape[-3] // k.shape[-3]
    k, v = by_query_head(k, group), by_query_head(v, group)
    if causal:
        mask = causal_mask(slice(first_row, first_row + q.shape[-2]), k.shape[-2], q.device)
    scale = 1.0 / q.shape[-1] ** 0.5 if scale is None else scale
    p, dead = probabilities(q, k, mask, scale, masking=mask is not None and not causal)
    return torch.matmul(p, v), dead


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


def causal_mask(rows: slice, keys: int, device) -> torch.Tensor:
    """``rows``' part of torch's top-left causal mask, as float64 to add to the scores: -inf above the diagonal
    ``rows.start`` places (row i keeps keys up to ``rows.start + i``)."""
    return torch.full((rows.stop - rows.start, keys), float("-inf"), dtype=torch.float64, device=device).triu(
        rows.start + 1)


def block_mask(mask, causal, b, heads, rows, keys, device):
    """The block's part of the call's mask (3-d: heads, rows, keys; dimensions of 1 where it broadcasts), or for
    ``is_causal`` the rows' part of torch's top-left causal mask (:func:`causal_mask`)."""
    if causal:
        return causal_mask(rows, keys, device)
    if mask is None:
        return None
    full = mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape))
    return full[b if full.shape[0] > 1 else 0,
                heads if full.shape[1] > 1 else slice(0, 1),
                rows if full.shape[2] > 1 else slice(0, 1)]


class Comparison(NamedTuple):
    """A check's result over the whole call."""

    error: float  # max |out - ref| over the rows with a key to attend to
    size: float  # max |ref|
    masked: int  # query rows whose every key was masked (not compared)
    masked_max: float  # the largest |out| on those rows
    out_max: float  # max |out|: NaN or Inf when the output holds one


def _largest(values: tuple[float, ...]) -> float:
    """The largest of ``values``; NaN if one is (Python's ``max`` would keep or drop a NaN by its place)."""
    return math.nan if any(math.isnan(x) for x in values) else max(values)


class _Comparison:
    """Each block's max |out - ref| over its compared rows, max |ref|, rows whose every key was masked, the largest
    |out| on them, and max |out|: written into one float64 tensor on the device, read back once (one wait for the
    GPU per check, not one per block) and reduced on the host."""

    def __init__(self, count: int, device) -> None:
        self.rows = torch.zeros(count, 5, dtype=torch.float64, device=device)
        self.filled = 0

    def add(self, out, ref, dead) -> None:
        """One block; ``dead``, its query rows whose every key is masked (keepdim, from :func:`reference`), or None
        where no row can lose every key."""
        row = self.rows[self.filled]
        self.filled += 1
        out = out.detach().double()
        gap = (out - ref).abs().amax(-1)
        row[1] = ref.abs().amax()
        row[4] = out.abs().amax()
        if dead is None:
            row[0] = gap.amax()
            return
        dead = dead.squeeze(-1)
        row[0] = gap.masked_fill(dead, 0).amax()
        row[2] = dead.sum()
        row[3] = out.abs().amax(-1).masked_fill(~dead, 0).amax()

    def result(self) -> Comparison:
        error, size, masked, masked_max, out_max = zip(*self.rows[:self.filled].tolist())
        return Comparison(_largest(error), _largest(size), int(sum(masked)), _largest(masked_max), _largest(out_max))


def reference_error(out, q, k, v, mask, causal, scale, gqa) -> Comparison:
    """The output against the float64 reference, ``ref`` computed block by block (:class:`Comparison`)."""
    if q.dim() != 4 or k.dim() != 4 or (gqa and q.shape[1] % k.shape[1]):
        seen = _Comparison(1, q.device)
        seen.add(out, *reference(q, k, v, mask, causal, scale, gqa))
        return seen.result()
    parts = list(blocks(q, k, gqa))
    seen = _Comparison(len(parts), q.device)
    for b, heads, kv_heads, rows in parts:
        kv = kv_heads if gqa else heads
        part = None if causal else block_mask(mask, False, b, heads, rows, k.shape[-2], q.device)
        seen.add(out[b, heads, rows], *reference(q[b, heads, rows], k[b, kv], v[b, kv], part, causal, scale, gqa,
                                                 rows.start))
    return seen.result()


def _flag_nonfinite(check: OutputCheck, q, k, v) -> None:
    """The output held NaN or Inf: the check fails, and says so when the inputs already held one."""
    check.nonfinite += 1
    check.samples += 1
    check.ok = False
    if not all(bool(torch.isfinite(t).all()) for t in (q, k, v)):
        check.note = check.note or "the inputs already held NaN or Inf"


def check_output(check: OutputCheck, out, q, k, v, mask, dropout_p, causal, scale, gqa) -> None:
    """Compare ``out`` with float64 MATH on copies of the inputs; record the result in ``check``."""
    try:
        if not isinstance(out, torch.Tensor):
            return
        if out.is_cuda and torch.cuda.is_current_stream_capturing():  # a sync would invalidate the program's graph
            return
        scores = q.numel() // max(q.shape[-1], 1) * k.shape[-2]
        too_many = scores > MAX_SCORES.get(q.device.type, MAX_SCORES["cpu"])
        if dropout_p or too_many:  # no reference: the output's NaN or Inf is looked for on its own
            if not bool(torch.isfinite(out).all()):
                _flag_nonfinite(check, q, k, v)
            elif dropout_p:
                check.note = "dropout: not checked (its random mask would draw from the program's random stream)"
            else:
                check.note = f"not checked: the float64 reference would compute {scores:,} scores"
            return
        with torch.no_grad():
            error, size, masked, masked_max, out_max = reference_error(out, q, k, v, mask, causal, scale, gqa)
        if not math.isfinite(out_max):
            _flag_nonfinite(check, q, k, v)
            return
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
