"""Readable identities for kernel names as CUPTI reports them (and CPU op names).

Only what a name says is reported: an unknown name gets no family, and a field the
name does not spell out stays None.

``tile`` is written the way the kernel's own name or template writes it:
- cuDNN and FlashAttention-2: ``BlockM x BlockN x HeadDim``, e.g. ``64x128x64`` from
  ``..._64x128x64_...`` or ``64x256x64`` from ``Flash_fwd_kernel_traits<64, 64, 256, ...>``
  (that template is ``<HeadDim, BlockM, BlockN, Warps, ...>``);
- CUTLASS memory-efficient: ``queries x keys`` per block, e.g. ``64x64``;
- cuBLAS: the block tile in the name, e.g. ``128x128x64``.
``arch`` is the architecture a kernel was built for (``sm80`` kernels also run on sm90).
Short display names (:func:`~.kernel_short_names.short_name`) are in :mod:`.kernel_short_names`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from ..protocol.records import KernelInfo
from .kernel_short_names import function_and_template, short_name

ATTENTION_FAMILIES = frozenset(
    {
        "cuDNN fused attention",
        "FlashAttention-2 forward",
        "FlashAttention-2 split-KV forward",
        "FlashAttention-2 split-KV combine",
        "FlashAttention-2 backward",
        "CUTLASS memory-efficient forward",
        "CUTLASS memory-efficient backward",
        "CPU flash attention",
    }
)
HELPER_FAMILIES = frozenset({"FlashAttention-2 split-KV combine"})
"""Attention kernels that finish another kernel's work: never the main kernel if another exists."""

AUXILIARY_FAMILIES = frozenset({"memset", "copy", "fill", "elementwise"})
"""Data movement and pointwise work, never the main kernel."""

_DTYPE_TOKENS = {"f16": "fp16", "fp16": "fp16", "bf16": "bf16", "f32": "fp32", "fp32": "fp32"}
_CPP_DTYPES = (
    ("cutlass::half_t", "fp16"),
    ("cutlass::bfloat16_t", "bf16"),
    ("c10::Half", "fp16"),
    ("c10::BFloat16", "bf16"),
    ("__half", "fp16"),
    ("__nv_bfloat16", "bf16"),
    ("float", "fp32"),
)
_CPP_DTYPE_RE = re.compile(
    "|".join(rf"(?<![\w:]){re.escape(t)}(?!\w)" for t, _ in _CPP_DTYPES)
)
_CUBLAS_PREFIX = re.compile(r"sm\d+_xmma_gemm|volta_|turing_|ampere_|hopper_")
_ARCH_WORDS = {"volta": "sm70", "turing": "sm75", "ampere": "sm80", "hopper": "sm90"}
_CPU_ELEMENTWISE = frozenset(
    {"add", "sub", "mul", "div", "where", "masked_fill", "neg", "exp", "to", "_to_copy"}
)


@dataclass(frozen=True)
class KernelIdentity:
    """What a kernel name says about the kernel."""

    short: str
    family: str | None = None
    arch: str | None = None
    instruction: str | None = None  # wgmma | wmma | mma
    tile: str | None = None
    dtype: str | None = None  # fp16 | bf16 | fp32
    direction: str | None = None  # forward | backward

    def describe(self) -> str:
        """E.g. 'cuDNN fused attention, sm90, wgmma, tile 64x128x64, fp16'; unknown: short name."""
        if self.family is None:
            return self.short
        head = self.family
        if self.direction == "backward" and "backward" not in head:
            head += " backward"
        parts = [head, self.arch, self.instruction, f"tile {self.tile}" if self.tile else None]
        return ", ".join(p for p in (*parts, self.dtype) if p)


# ------------------------------------------------------------------------ identification
def _tokens(func: str) -> list[str]:
    return func.lower().split("_")


def _token_dtype(tokens: list[str]) -> str | None:
    """The first dtype token: 'f16', 'bf16', 'fp32', or a run like 'f16f16' (A and B types)."""
    for tok in tokens:
        m = re.match(r"(bf16|fp16|fp32|f16|f32)(?=$|[bf])", tok)
        if m:
            return _DTYPE_TOKENS[m.group(1)]
    return None


def _cpp_dtype(text: str) -> str | None:
    m = _CPP_DTYPE_RE.search(text)
    return dict(_CPP_DTYPES)[m.group(0)] if m else None


def _token_arch(tokens: list[str]) -> str | None:
    for tok in tokens:
        if re.fullmatch(r"sm\d{2,3}a?", tok):
            return tok
        if tok in _ARCH_WORDS:
            return _ARCH_WORDS[tok]
    return None


def _token_tile(tokens: list[str]) -> str | None:
    for tok in tokens:
        m = re.fullmatch(r"(?:tilesize)?(\d+x\d+(?:x\d+)?)", tok)
        if m:
            return m.group(1)
    return None


def _instruction(tokens: list[str]) -> str | None:
    return next((t for t in tokens if t in ("wgmma", "wmma", "mma")), None)


def _cudnn(name: str, func: str) -> KernelIdentity | None:
    low = func.lower()
    if "cudnn::fusion::" in name and ("dot_do_o" in low or "dq" in low):
        return KernelIdentity("", "cuDNN fused attention", direction="backward")  # bprop helpers
    if not low.startswith("cudnn") or not any(w in low for w in ("sdpa", "fprop", "bprop", "fmha")):
        return None
    tokens = _tokens(func)
    direction = "forward" if "fprop" in tokens else "backward" if "bprop" in tokens else None
    return KernelIdentity(
        "", "cuDNN fused attention", _token_arch(tokens), _instruction(tokens),
        _token_tile(tokens), _token_dtype(tokens), direction,
    )  # fmt: skip


def _flash(func: str, template: str) -> KernelIdentity | None:
    if not func.startswith(("flash_fwd", "flash_bwd")):
        return None
    if func.startswith("flash_bwd"):
        family, direction = "FlashAttention-2 backward", "backward"
        tiled = func.startswith("flash_bwd_dq_dk_dv_loop")  # helpers only carry the traits
    elif "combine" in func:
        family, direction, tiled = "FlashAttention-2 split-KV combine", "forward", False
    elif "splitkv" in func:
        family, direction, tiled = "FlashAttention-2 split-KV forward", "forward", True
    else:
        family, direction, tiled = "FlashAttention-2 forward", "forward", True
    tile = None
    m = re.search(r"Flash_(?:fwd|bwd)_kernel_traits<\s*(\d+),\s*(\d+),\s*(\d+)", template)
    if tiled and m:
        head_dim, block_m, block_n = m.groups()
        tile = f"{block_m}x{block_n}x{head_dim}"
    return KernelIdentity("", family, None, None, tile, _cpp_dtype(template), direction)


def _mem_efficient(func: str) -> KernelIdentity | None:
    m = re.match(r"fmha_cutlass([FB])_", func)
    if not m:
        return None
    forward = m.group(1) == "F"
    tokens = _tokens(func)
    tile = next((t for t in tokens if re.fullmatch(r"\d+x\d+", t)), None)
    family = "CUTLASS memory-efficient " + ("forward" if forward else "backward")
    return KernelIdentity(
        "", family, _token_arch(tokens), None, tile, _token_dtype(tokens),
        "forward" if forward else "backward",
    )  # fmt: skip


def _gemm(func: str) -> KernelIdentity | None:
    low = func.lower()
    if "gemm" not in low:
        return None
    tokens = _tokens(func)
    cublas = "cublas" in low or bool(_CUBLAS_PREFIX.match(low))
    return KernelIdentity(
        "", "cuBLAS GEMM" if cublas else "GEMM", _token_arch(tokens),
        _instruction(tokens), _token_tile(tokens), _token_dtype(tokens),
    )  # fmt: skip


def _generic(func: str, template: str) -> KernelIdentity | None:
    low = func.lower()
    family = None
    if "softmax" in low:
        family = "softmax"
    elif "copy" in low or "copy_kernel" in template:
        family = "copy"
    elif "FillFunctor" in template or "fill" in low:
        family = "fill"
    elif "reduce" in low:
        family = "reduction"
    elif "elementwise" in low:
        family = "elementwise"
    if family is None:
        return None
    direction = "forward" if "forward" in low else "backward" if "backward" in low else None
    # a reduction's first type is its accumulator and a copy may cast: no dtype for those
    dtype = None if family in ("reduction", "copy") else _cpp_dtype(template)
    return KernelIdentity("", family, None, None, None, dtype, direction)


def _cpu_op(name: str) -> KernelIdentity:
    op = name[len("aten::") :]
    short = short_name(name)
    if op.startswith("_scaled_dot_product_flash_attention_for_cpu"):
        direction = "backward" if op.endswith("backward") else "forward"
        return KernelIdentity(short, "CPU flash attention", direction=direction)
    if op in ("_softmax", "softmax", "_safe_softmax"):
        return KernelIdentity(short, "softmax", direction="forward")
    if op in ("bmm", "baddbmm", "mm", "addmm", "matmul"):
        return KernelIdentity(short, "CPU matmul")
    if op in ("copy_", "clone", "contiguous"):
        return KernelIdentity(short, "copy")
    if op in ("fill_", "zero_"):
        return KernelIdentity(short, "fill")
    if op.rstrip("_") in _CPU_ELEMENTWISE:
        return KernelIdentity(short, "elementwise")
    return KernelIdentity(short)


@lru_cache(maxsize=4096)
def identify(name: str) -> KernelIdentity:
    """What ``name`` says about its kernel (or CPU op); family None when unknown."""
    name = name.strip()
    if name.startswith("aten::"):
        return _cpu_op(name)
    if name.startswith("Memset"):
        return KernelIdentity(short_name(name), "memset")
    if name.startswith("Memcpy"):
        return KernelIdentity(short_name(name), "copy")
    func, template = function_and_template(name)
    found = (
        _cudnn(name, func)
        or _flash(func, template)
        or _mem_efficient(func)
        or _gemm(func)
        or _generic(func, template)
    )
    return replace(found, short=short_name(name)) if found else KernelIdentity(short_name(name))


def main_kernel(kernels: Sequence[KernelInfo]) -> KernelInfo | None:
    """The attention kernel of one call.

    Memsets, memcpys and copy/fill/elementwise kernels are skipped; an attention kernel
    is preferred (a split-KV combine only if nothing else); on the CPU, where MATH is a few
    ops of similar length, its matmul (``aten::bmm`` and ``aten::_softmax`` traded places between
    runs, and ``compare`` saw a change where there was none); else the longest remaining
    kernel; else the longest of all; None when there is nothing.
    """
    if not kernels:
        return None
    longest = lambda ks: max(ks, key=lambda k: k.duration_us)  # noqa: E731
    families = {id(k): identify(k.name).family for k in kernels}
    rest = [
        k
        for k in kernels
        if k.category in ("kernel", "cpu_op") and families[id(k)] not in AUXILIARY_FAMILIES
    ]
    attention = [k for k in rest if families[id(k)] in ATTENTION_FAMILIES]
    primary = [k for k in attention if families[id(k)] not in HELPER_FAMILIES]
    cpu_matmul = [k for k in rest if families[id(k)] == "CPU matmul"]
    for group in (primary, attention, cpu_matmul, rest):
        if group:
            return longest(group)
    return longest(kernels)
