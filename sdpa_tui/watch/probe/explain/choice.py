"""The backend SDPA chose for a call, and each other backend's reason, in torch's words.

Asked once per signature, on its first call, under the flags in force at that call.
Nothing here runs a kernel on the GPU: ``torch._fused_sdp_choice`` and
``can_use_*_attention(SDPAParams(...), debug=True)`` only decide (their reasons go to fd 2,
which is read back for the moment of the call and anything else re-emitted). On the CPU,
where ``can_use_*`` speak only of CUDA, the CPU flash kernel is asked by forcing it once on
detached copies, with the random number generator's state kept.
"""

from __future__ import annotations

import os
import re
import tempfile
import warnings

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from ....core.backends import ALL_BACKENDS, CHOICE_CODES, Backend
from ....core.calls.mask_forms import CAUSAL, CAUSAL_KEY_PADDING, KEY_PADDING, NONE, OTHER
from ....core.calls.watched_calls import ELIGIBLE, FLAG_OFF
from ....engine.measuring.eligibility import clean_message, priority_order, reasons_for

_CAN_USE = {
    Backend.FLASH: "can_use_flash_attention",
    Backend.EFFICIENT: "can_use_efficient_attention",
    Backend.CUDNN: "can_use_cudnn_attention",
}
_FLAG_OFF = FLAG_OFF + " (sdpa_kernel, or torch.backends.cuda.enable_{}_sdp(False))"
_WARNING_PREFIX = re.compile(r"^Warning:\s*")
_RANK_PREFIX = re.compile(r"^\[rank\d+\]:")  # c10's log prefix once torch.distributed is initialised
_FUNCTION_SUFFIX = re.compile(r"\s*\(function [\w:<>~]+\)\s*$")
_FLAG_WORD = {Backend.FLASH: "flash", Backend.EFFICIENT: "mem_efficient", Backend.CUDNN: "cudnn", Backend.MATH: "math"}


def chosen_backend(q, k, v, mask, dropout_p, causal, scale, gqa) -> tuple[str | None, str]:
    """(SDPBackend name, "") or (None, torch's error)."""
    chooser = getattr(torch, "_fused_sdp_choice", None)
    if chooser is None:
        return None, "this torch has no torch._fused_sdp_choice to ask"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            code = int(chooser(q, k, v, mask, dropout_p, causal, scale=scale, enable_gqa=gqa))
        except RuntimeError as exc:
            return None, clean_message(str(exc)).splitlines()[0]
    backend = CHOICE_CODES.get(code)
    return (backend.value, "") if backend else (None, f"torch chose backend code {code}, unknown to sdpa-tui")


def why_not(chosen: str | None, flags: tuple[str, ...], q, k, v, mask, dropout_p, causal, scale, gqa) -> dict[str, str]:
    """Backend name → why SDPA did not pick it for this call."""
    order = [name for name in priority_order() if name in flags]
    reasons: dict[str, str] = {}
    for backend in ALL_BACKENDS:
        if backend.value == chosen:
            continue
        if backend.value not in flags:
            reasons[backend.value] = _FLAG_OFF.format(_FLAG_WORD[backend])
            continue
        if q.device.type == "cpu":
            reasons[backend.value] = _cpu_reason(backend, q, k, v, mask, dropout_p, causal, scale, gqa)
        elif backend is Backend.MATH:
            reasons[backend.value] = f"{ELIGIBLE}; a fused backend comes first in the priority order"
        else:
            reasons[backend.value] = _cuda_reason(backend, q, k, v, mask, dropout_p, causal, gqa)
        if reasons[backend.value] == ELIGIBLE and q.device.type == "cpu":
            reasons[backend.value] = f"{ELIGIBLE}; on the CPU SDPA takes {chosen} whenever it can (no priority order)"
        elif reasons[backend.value] == ELIGIBLE and chosen in order and backend.value in order:
            reasons[backend.value] = f"{ELIGIBLE}; {chosen} comes first in the priority order ({', '.join(order)})"
    return reasons


def _cuda_reason(backend: Backend, q, k, v, mask, dropout_p, causal, gqa) -> str:
    cuda = torch.backends.cuda
    can_use = getattr(cuda, _CAN_USE[backend], None)
    params_type = getattr(cuda, "SDPAParams", None)
    if can_use is None or params_type is None:
        return "this torch cannot say (no torch.backends.cuda.SDPAParams / can_use_*)"
    try:
        params = params_type(q, k, v, mask, dropout_p, causal, gqa)
    except TypeError:  # torch before 2.5: six arguments
        params = params_type(q, k, v, mask, dropout_p, causal)
    ok, lines = _with_fd2_read(lambda: bool(can_use(params, True)))
    if ok:
        return ELIGIBLE
    own = reasons_for(backend, lines) or [line for line in lines if "not used because" not in line]
    return "; ".join(dict.fromkeys(own)) or "not eligible (torch gave no reason)"


def _cpu_reason(backend: Backend, q, k, v, mask, dropout_p, causal, scale, gqa) -> str:
    if backend in (Backend.EFFICIENT, Backend.CUDNN):
        return f"{backend.label} has no CPU implementation (on the CPU, SDPA has a flash kernel and MATH)"
    detached = [t.detach().requires_grad_(t.requires_grad) if t.is_floating_point() else t.detach() for t in (q, k, v)]
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with sdpa_kernel([getattr(SDPBackend, backend.value)]):
                torch._C._nn.scaled_dot_product_attention(  # the original, never the watch wrapper
                    *detached, attn_mask=mask, dropout_p=dropout_p, is_causal=causal, scale=scale, enable_gqa=gqa
                )
            return ELIGIBLE
        except RuntimeError as exc:
            lines = [m for m in (clean_message(str(w.message)) for w in caught) if m]
            own = reasons_for(backend, lines)
            return "; ".join(dict.fromkeys(own)) or clean_message(str(exc)).splitlines()[0]


def _with_fd2_read(fn):
    """Run ``fn`` with fd 2 pointed at a file; return its result and the lines written meanwhile.

    Lines that are not torch's reasons (another thread's output) are written back to fd 2.
    """
    import sys

    try:
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    saved = os.dup(2)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            result = fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        text = capture.read().decode(errors="replace")
    lines, others = [], []
    for raw in text.splitlines():
        raw = _RANK_PREFIX.sub("", raw)
        line = clean_message(raw.split("] ", 1)[1] if raw.startswith("[W") and "] " in raw else raw)
        line = _FUNCTION_SUFFIX.sub("", _WARNING_PREFIX.sub("", line)).strip()
        if not line:
            continue
        (lines if ("not used because" in line or raw.startswith("[W") or raw.startswith(" ")) else others).append(line)
    if others:
        os.write(2, ("\n".join(others) + "\n").encode())
    return result, lines


def mask_is_causal(mask, q, k) -> bool:
    """Is ``mask`` exactly what ``is_causal=True`` applies (top-left aligned, every batch and head): a boolean mask
    equal to ``tril(ones(L, S))``, or a float one that is 0 there and -inf above? Read once, at a signature's
    first call (pytorch#177712: a mask where ``is_causal`` would do keeps Flash out)."""
    if mask is None or mask.dim() < 2 or mask.shape[-2:] != (q.shape[-2], k.shape[-2]):
        return False
    try:
        with torch.no_grad():
            keep = torch.ones(mask.shape[-2:], dtype=torch.bool, device=mask.device).tril()
            if mask.dtype == torch.bool:
                return bool((mask == keep).all())
            if not mask.is_floating_point():
                return False
            return bool(((mask == 0) == keep).all() and torch.isneginf(mask[..., ~keep]).all())
    except Exception:  # noqa: BLE001 - a mask this cannot read is simply not advised on
        return False


def mask_form(mask, q, k, causal: bool) -> str:
    """The call's mask as ``core/calls/mask_forms`` names it: a mask that keeps the same keys for every query row is key
    padding; one equal to that and the causal triangle (top-left, as ``is_causal``) is causal key padding; a float
    mask counts as keeping where it is 0 and masking where it is -inf or at its dtype's lowest (transformers'); one
    that differs between heads, or holds other values (a bias), is ``other``. Read once, at a signature's first
    call, on the call's own mask."""
    if mask is None:
        return CAUSAL if causal else NONE
    if causal or mask.dim() < 2 or mask.shape[-2:] != (q.shape[-2], k.shape[-2]) and mask.shape[-2] != 1:
        return OTHER
    try:
        with torch.no_grad():
            keep = _kept(mask)
            if keep is None:
                return OTHER
            keep = keep.reshape((1,) * (4 - keep.dim()) + tuple(keep.shape)) if keep.dim() < 4 else keep
            if keep.dim() != 4 or not bool((keep == keep[:, :1]).all()):
                return OTHER  # differs between heads (or more than 4 dims)
            keep = keep[:, 0].expand(keep.shape[0], q.shape[-2], k.shape[-2])
            key_keep = keep[:, -1, :]  # the last query row: every key that padding does not hide
            if bool((keep == key_keep[:, None, :]).all()):
                return KEY_PADDING
            triangle = torch.ones(keep.shape[-2:], dtype=torch.bool, device=keep.device).tril()
            if bool((keep == (triangle & key_keep[:, None, :])).all()):
                return CAUSAL if bool(key_keep.all()) else CAUSAL_KEY_PADDING
            return OTHER
    except Exception:  # noqa: BLE001 - a mask this cannot read is one no alternative is offered for
        return OTHER


def memory_layout(t) -> str:
    """How a 4-d Q, K or V lies in memory (``core/calls/watched_calls.LAYOUTS``): "bhld" where it is contiguous as
    passed ([batch, heads, length, head dim]), "blhd" where it is a [batch, length, heads, head dim] tensor
    transposed (transformers' queries), "" otherwise. Strides only: no wait for the GPU."""
    if t.dim() != 4:
        return ""
    if t.is_contiguous():
        return "bhld"
    return "blhd" if t.transpose(1, 2).is_contiguous() else ""


def _kept(mask):
    """Where a mask keeps a key (bool), or None for a float mask with values other than 0 and masked."""
    if mask.dtype == torch.bool:
        return mask
    if not mask.is_floating_point():
        return None
    masked = torch.isneginf(mask) | (mask <= torch.finfo(mask.dtype).min / 2)
    return (mask == 0) if bool(((mask == 0) | masked).all()) else None
