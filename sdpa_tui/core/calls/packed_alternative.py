"""Packed attention as the alternative for a padded batch: the real tokens gathered out of the padded Q, K, V, attention
run on them alone, the output scattered back (zeros at the padding). Two ways: ``varlen_attn``
(``torch.nn.attention.varlen``, torch 2.10+, CUDA only: Flash's variable-length kernel) and SDPA on jagged nested
tensors (``torch.nested``, ``layout=torch.jagged``). The code written here is the one source: the measuring child
(``engine/costs/packed_cost.py``) runs exactly this text on the call's shapes with the call's own lengths, holds its
output against the call's SDPA output on the real rows (the padded rows' outputs are thrown away by the program), and
times all of it, the packing and unpacking included; the advice shows the same text.

Which calls: a key-padding mask, or causal and key padding (``core/calls/mask_forms``), of self-attention (queries and
keys of one length: the query rows kept are the keys kept). The kept keys need not be a prefix: right padding, left
padding and holes are packed alike (the order of the kept tokens is kept, so causal stays causal). The real lengths
are those the probe read from the call's mask on sampled calls (``core/padded_lengths``).

The code has two parts, each under its header line: what is done once per batch (the real tokens' indices and
lengths, read from the mask: two waits for the GPU) and what every call does (gather the real tokens, attend, scatter
back: no wait, so a CUDA graph can capture it). A transformer builds one mask per forward and passes it to every
layer, so the first part is paid once for the calls of all of them: the advice counts its cost once per
``calls_per_batch`` calls (the call's modules, one call each per forward), and says so.

Pure: the measurement comes back as a :class:`PackedCost` (the per-call part on the lab's clocks, as
:class:`~.flex_alternative.FlexCost`, its ``compile_s`` the first call's time here, not shown; the once-per-batch
part's host time apart), made a :class:`~.advice.Measured` by :func:`packed_alternative`.
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..stats import Summary
from ..workload import Workload
from .advice import Alternative, Beside, Measured
from .call_signature import DTYPE_NAMES, CallSignature
from .flex_alternative import FlexCost
from .mask_forms import CAUSAL_KEY_PADDING, KEY_PADDING

VARLEN = "VARLEN_ATTN"
NESTED = "NESTED_JAGGED"
LABELS = {VARLEN: "varlen_attn (packed)", NESTED: "nested jagged SDPA (packed)"}
"""The alternatives' names (not SDPA backends: ``backend_label`` shows these)."""
VARIANTS = {VARLEN: "varlen", NESTED: "nested"}
PACKED_FORMS = (KEY_PADDING, CAUSAL_KEY_PADDING)
VARLEN_SINCE = (2, 10)
WINDOW_SINCE = (2, 11)
"""``varlen_attn`` took ``is_causal`` in torch 2.10 and ``window_size`` from 2.11 on (2.11 raised TypeError on
``is_causal`` on an H100)."""
KEYWORDS_SINCE = (2, 12)
"""``varlen_attn`` takes ``scale`` and ``enable_gqa`` from torch 2.12 on (2.11 raised TypeError on ``enable_gqa``)."""
NEEDS_CUDA = "varlen_attn runs on CUDA only (Flash's kernel; torch on the CPU raises NotImplementedError)"
ONCE_PER_BATCH = ("# once per batch (every layer's call gets the same mask: run this where the mask is made, "
                  "and keep its names)")
EVERY_CALL = "# every call: the real tokens gathered, attended, scattered back"
"""The header lines of the code's two parts (:func:`code_parts` splits the text at them)."""


@dataclass(frozen=True)
class CodeParts:
    """A packed code's three parts as text: its imports (and, for a call under autograd, the gather's function), what
    runs once per batch, what runs in every call."""

    imports: str
    per_batch: str
    per_call: str


def code_parts(code: str) -> CodeParts:
    """The code split at its header lines (:data:`ONCE_PER_BATCH`, :data:`EVERY_CALL`); ``ValueError`` where a header
    is missing."""
    lines = code.splitlines()
    try:
        batch, call = lines.index(ONCE_PER_BATCH), lines.index(EVERY_CALL)
    except ValueError:
        raise ValueError("packed code without its 'once per batch' and 'every call' header lines") from None
    return CodeParts("\n".join(lines[:batch]), "\n".join(lines[batch + 1:call]), "\n".join(lines[call + 1:]))


@dataclass(frozen=True)
class CallClocks:
    """SDPA called as the call was (its mask as passed, Q, K, V laid out as the call's), µs per call as samples: the
    baseline a packed code is held against, measured beside it."""

    eager_us: tuple[float, ...]
    gpu_us: tuple[float, ...]
    host_us: tuple[float, ...]
    host_forward_us: tuple[float, ...] = ()  # under autograd: the forward alone on the host clock
    queued_us: tuple[float, ...] = ()  # on a GPU: its time a call with the host's launches ahead (``clocks.queued_us``)

    def to_dict(self) -> dict[str, Any]:
        return {"eager_us": list(self.eager_us), "gpu_us": list(self.gpu_us), "host_us": list(self.host_us),
                "host_forward_us": list(self.host_forward_us), "queued_us": list(self.queued_us)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CallClocks":
        return cls(tuple(d.get("eager_us") or ()), tuple(d.get("gpu_us") or ()), tuple(d.get("host_us") or ()),
                   tuple(d.get("host_forward_us") or ()), tuple(d.get("queued_us") or ()))


@dataclass(frozen=True)
class PackedCost(FlexCost):
    """A packed code's cost: the every-call part on the lab's clocks (:class:`FlexCost`'s fields, the once-per-batch
    part run before), and the once-per-batch part's host time per batch (``batch_eager_us``, samples: its waits for
    the GPU included, which stand for its cost on both clocks, since the GPU idles while the host waits) and its GPU
    work (``batch_kernel_us``); the every-call part's host time (``host_us``) and the call's own clocks beside it
    (``call``)."""

    batch_eager_us: tuple[float, ...] = ()
    batch_kernel_us: float | None = None
    host_us: tuple[float, ...] = ()  # the every-call part on the host clock (``clocks.host_us``): launches only
    host_forward_us: tuple[float, ...] = ()  # under autograd: its forward alone on the host clock
    call: CallClocks | None = None  # SDPA called as the call was, on the same inputs, in the same process
    queued_us: tuple[float, ...] = ()  # the every-call part on the queued clock (``clocks.queued_us``), on a GPU

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "batch_eager_us": list(self.batch_eager_us),
                "batch_kernel_us": self.batch_kernel_us, "host_us": list(self.host_us),
                "host_forward_us": list(self.host_forward_us), "call": self.call.to_dict() if self.call else None,
                "queued_us": list(self.queued_us)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PackedCost":
        flex = FlexCost.from_dict(d)
        return cls(**{f: getattr(flex, f) for f in flex.__dataclass_fields__},
                   batch_eager_us=tuple(d.get("batch_eager_us") or ()), batch_kernel_us=d.get("batch_kernel_us"),
                   host_us=tuple(d.get("host_us") or ()), host_forward_us=tuple(d.get("host_forward_us") or ()),
                   call=CallClocks.from_dict(d["call"]) if d.get("call") else None,
                   queued_us=tuple(d.get("queued_us") or ()))

    @property
    def batch_us(self) -> float | None:
        """The once-per-batch part's host time (median), or None where it was not timed."""
        summary = Summary.of(self.batch_eager_us)
        return summary.median if summary else None


@dataclass(frozen=True)
class PackedSpec:
    """What to run and measure: the codes (by name, :data:`VARLEN` and :data:`NESTED`) at the lab workload of a call
    (its shapes, with ``lengths``: the real lengths of one of its sampled batches), on its device, with a mask of the
    call's form and kind as the call passed it (``mask``: "bool" or "float"; ``mask_dims``) and Q, K, V laid out in
    memory as the call's were (``layouts``, ``watched_calls.LAYOUTS``; empty: contiguous); ``calls_per_batch``: the
    calls that share one mask, over which the once-per-batch part's cost is spread."""

    workload: Workload
    device: str
    mask_form: str
    mask: str
    mask_dims: int
    scale: float | None
    codes: tuple[tuple[str, str], ...]
    calls_per_batch: int = 1
    layouts: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"workload": asdict(self.workload), "device": self.device, "mask_form": self.mask_form,
                "mask": self.mask, "mask_dims": self.mask_dims, "scale": self.scale,
                "codes": [list(c) for c in self.codes], "calls_per_batch": self.calls_per_batch,
                "layouts": list(self.layouts)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PackedSpec":
        return cls(Workload.from_dict(d["workload"]), d["device"], d["mask_form"], d["mask"], int(d["mask_dims"]),
                   d.get("scale"), tuple((str(n), str(c)) for n, c in d["codes"]), int(d.get("calls_per_batch", 1)),
                   tuple(str(x) for x in d.get("layouts") or ()))


def packed_spec(workload: Workload, signature: CallSignature, mask_form: str, lengths: tuple[int, ...],
                calls_per_batch: int = 1, layouts: tuple[str, ...] = ()) -> PackedSpec | str | None:
    """The spec of a padded call, why packing is not offered for it, or None where the call is not padded;
    ``calls_per_batch``: the modules that make the call (each is one call per forward on the batch's one mask);
    ``layouts``: its Q, K, V in memory."""
    if mask_form not in PACKED_FORMS:
        return None
    if workload.seq != workload.kv_seq:
        return (f"its queries ({workload.seq}) and keys ({workload.kv_seq}) differ in length: packing here is "
                "self-attention's, the query rows kept being the keys kept")
    if signature.dropout_p:
        return "the call has dropout: varlen_attn and the packed code here run none"
    if not lengths:
        return "no lengths were read from its mask"
    if len(lengths) != workload.batch:
        return f"its mask gave {len(lengths)} lengths for a batch of {workload.batch}"
    dims = len(signature.mask_shape or ())
    if dims != 4:  # a mask of fewer dimensions broadcasts over the batch: every sequence would have one length
        return f"its mask has {dims} dimensions: the packing here reads a [batch, heads, rows, keys] mask"
    padded = workload.with_changes(lengths=tuple(lengths))
    return PackedSpec(padded, signature.device, mask_form, signature.mask, dims, _scale(signature.scale),
                      ((VARLEN, varlen_code(signature, mask_form)), (NESTED, nested_code(signature, mask_form))),
                      max(1, calls_per_batch), tuple(layouts))


def _scale(scale: Any) -> float | None:
    return None if scale is None else float(scale)


def keep_line(signature: CallSignature) -> str:
    """``keep``: [batch, length], True at the real tokens, from the call's 4-d ``attn_mask`` (its first head's last
    query row: every key that padding does not hide, in a causal mask too; a float mask keeps where it is 0)."""
    row = "attn_mask[:, 0, -1]"
    if signature.mask == "float":
        row = f"({row} == 0)"
    return f"keep = {row}.expand(q.shape[0], -1)  # [batch, length]: True at the real tokens"


REAL_TOKENS = ("real = keep.flatten().nonzero().squeeze(1)  # the real tokens' places in [batch × length] "
               "(waits for the GPU)")
LENGTHS = "lengths = keep.sum(-1, dtype=torch.int32)"
LONGEST = "longest = int(lengths.max())  # waits for the GPU"
UNPACK = ("out = packed.new_zeros(q.shape[0] * q.shape[2], *packed.shape[1:]).index_copy(0, real, packed)  "
          "# zeros at the padded rows",
          "out = out.unflatten(0, (q.shape[0], q.shape[2])).transpose(1, 2)  # [batch, heads, length, head dim]")
"""The packed output scattered back by one ``index_copy`` along the tokens (its backward: one ``index_select``)."""


GATHER = '''class RealTokens(torch.autograd.Function):  # the gradient back by index_copy: no index repeats
    @staticmethod
    def forward(ctx, t, real):
        ctx.save_for_backward(real)
        ctx.rows = t.shape[0]
        return t.index_select(0, real)

    @staticmethod
    def backward(ctx, grad):
        (real,) = ctx.saved_tensors
        return grad.new_zeros(ctx.rows, *grad.shape[1:]).index_copy(0, real, grad), None'''
"""For a call under autograd: ``index_select``'s own backward is ``index_add`` (atomic adds: 85-155 µs a call for Q, K,
V on an H200 at [8, 16, 1024, 64] bf16 padded 60-25 %), where the real tokens' places never repeat and one
``index_copy`` does (scripts/diagnostics/diag_packed_kernels.py)."""


def gathered(q: str = "q", k: str = "k", v: str = "v", grad: bool = False) -> str:
    """The real tokens gathered as [tokens, heads, head dim] along the flattened batch and length (a view where the
    tensor is a transposed [batch, length, heads, head dim], a copy first where it is contiguous): ``index_select``,
    or :data:`GATHER`'s function under autograd. The advanced indexing ``t.transpose(1, 2)[b, s]`` took 92 µs a
    forward for Q, K, V on an H100 at [8, 16, 1024, 64] bf16 padded 60 %, and sorted its indices in the backward."""
    flat = "t.transpose(1, 2).flatten(0, 1)"
    take = f"RealTokens.apply({flat}, real)" if grad else f"{flat}.index_select(0, real)"
    return f"({take} for t in ({q}, {k}, {v}))"


REPEAT_KV = ("kr, vr = (t.repeat_interleave(q.shape[1] // t.shape[1], dim=1) for t in (k, v))  "
             "# GQA: each key/value head for its group of query heads")


def installed_torch() -> tuple[int, int] | None:
    """The installed torch's (major, minor), read from its package metadata without importing it; None if unknown."""
    try:
        found = re.match(r"(\d+)\.(\d+)", importlib.metadata.version("torch"))
    except importlib.metadata.PackageNotFoundError:
        return None
    return (int(found[1]), int(found[2])) if found else None


def _keywords(words: list[str]) -> str:
    return "".join(f", {w}" for w in words)


def varlen_code(signature: CallSignature, mask_form: str, torch_version: tuple[int, int] | None = None) -> str:
    """Pack, ``varlen_attn``, unpack: the lines that replace the SDPA call (``q, k, v``, ``attn_mask`` in scope;
    ``out`` its result, [batch, heads, length, head dim] as SDPA's), for the keywords of ``torch_version`` (the
    installed torch's by default): causal is ``window_size=(-1, 0)`` from 2.11 (``is_causal=True`` in 2.10); GQA and
    the scale are keywords from 2.12, before which key/value heads are repeated and the scale is folded into ``q``."""
    version = torch_version or installed_torch() or KEYWORDS_SINCE
    causal = mask_form == CAUSAL_KEY_PADDING
    lines = [EVERY_CALL]
    words = [("window_size=(-1, 0)" if version >= WINDOW_SINCE else "is_causal=True")] * causal
    names = ["q", "k", "v"]
    scaled = signature.scale is not None and abs(signature.scale * signature.q_shape[-1] ** 0.5 - 1) > 1e-6
    if version >= KEYWORDS_SINCE:
        words += ["enable_gqa=True"] * signature.gqa + [f"scale={signature.scale!r}"] * scaled
    else:
        if signature.gqa:
            lines.append(REPEAT_KV)
            names[1:] = ["kr", "vr"]
        if scaled:
            lines.append(f"qs = q * ({signature.scale!r} * q.shape[-1] ** 0.5)  # the call's scale (varlen_attn before "
                         "torch 2.12 takes none: it divides by the square root of the head dim)")
            names[0] = "qs"
    return "\n".join([
        "from torch.nn.attention.varlen import varlen_attn",
        *[GATHER] * signature.grad,
        ONCE_PER_BATCH,
        keep_line(signature),
        REAL_TOKENS,
        LENGTHS,
        "cu_seq = F.pad(lengths.cumsum(0, dtype=torch.int32), (1, 0))",
        LONGEST,
        *lines,
        f"packed = varlen_attn(*{gathered(names[0], names[1], names[2], grad=signature.grad)}, cu_seq, cu_seq, "
        f"longest, longest{_keywords(words)})",
        *UNPACK,
    ])


def nested_code(signature: CallSignature, mask_form: str) -> str:
    """Pack into jagged nested tensors, SDPA on them, unpack (names as :func:`varlen_code`). Jagged tensors broadcast
    no heads: key/value heads are repeated for GQA."""
    words = ["is_causal=True"] * (mask_form == CAUSAL_KEY_PADDING)
    words += [f"scale={signature.scale!r}"] * (signature.scale is not None)
    k, v = ("kr", "vr") if signature.gqa else ("k", "v")
    return "\n".join([
        *[GATHER] * signature.grad,
        ONCE_PER_BATCH,
        keep_line(signature),
        REAL_TOKENS,
        LENGTHS,
        "offsets = F.pad(lengths.cumsum(0), (1, 0))",
        LONGEST,
        "shortest = int(lengths.min())",
        EVERY_CALL,
        *[REPEAT_KV] * signature.gqa,
        f"tokens = {gathered('q', k, v, grad=signature.grad)}  # each [tokens, heads, head dim]",
        "nested = [torch.nested.nested_tensor_from_jagged(t, offsets, min_seqlen=shortest, max_seqlen=longest)"
        ".transpose(1, 2) for t in tokens]",
        f"packed = F.scaled_dot_product_attention(*nested{_keywords(words)}).transpose(1, 2).values()",
        *UNPACK,
    ])


def refusal(device: str) -> str | None:
    """Why packed attention is not measured on this device at all (one line for the run), or None."""
    return None if device.startswith("cuda") else NEEDS_CUDA


def packed_alternative(name: str, cost: PackedCost, spec: PackedSpec) -> Measured:
    """The alternative as the advice lists it (it leaves SDPA), with its eager, GPU/call and host summaries for the
    noise rule: each per-call sample with the once-per-batch part's share (its host time over the spec's
    ``calls_per_batch``) added, and the call's own clocks measured beside it; the code is the spec's, the text the
    measuring ran."""
    batch_us = cost.batch_us
    share = (batch_us or 0.0) / spec.calls_per_batch
    eager = Summary.of(x + share for x in cost.eager_us)
    gpu = Summary.of(x + share for x in cost.gpu_us)
    kernel = cost.kernel_us
    if kernel is not None and cost.batch_kernel_us is not None:
        kernel += cost.batch_kernel_us / spec.calls_per_batch
    code = dict(spec.codes)[name]
    alternative = Alternative(VARIANTS[name], name, kernel, gpu.median if gpu else None,
                              eager.median if eager else None, cost.error, cost.peak_mib, code,
                              leaves_sdpa=True,  # its first call compiles nothing: not said apart
                              per_batch_us=batch_us, calls_per_batch=spec.calls_per_batch)
    call = cost.call
    beside = None if call is None else Beside(
        Summary.of(x + share for x in cost.host_us), Summary.of(call.host_us), Summary.of(call.gpu_us),
        Summary.of(call.eager_us), Summary.of(x + share for x in cost.host_forward_us),
        Summary.of(call.host_forward_us), Summary.of(x + share for x in cost.queued_us), Summary.of(call.queued_us))
    if beside is not None and beside.call_gpu is not None:
        alternative = replace(alternative, call_gpu_us=beside.call_gpu.median)
    return Measured(alternative, eager, gpu, beside)


def lab_spec(workload: Workload, device: str) -> PackedSpec:
    """The spec of a lab workload with lengths (``report --lengths``): the call the lab measures, a boolean
    [batch, 1, 1, keys] key-padding mask."""
    w = workload
    dtype = next(torch_name for torch_name, short in DTYPE_NAMES.items() if short == w.dtype)
    signature = CallSignature((w.batch, w.heads, w.seq, w.head_dim), (w.batch, w.kv_heads, w.kv_seq, w.head_dim),
                              dtype, device, "bool", (w.batch, 1, 1, w.kv_seq), gqa=w.gqa, grad=w.backward)
    return PackedSpec(w, device, KEY_PADDING, "bool", 4, None,
                      ((VARLEN, varlen_code(signature, KEY_PADDING)), (NESTED, nested_code(signature, KEY_PADDING))))
