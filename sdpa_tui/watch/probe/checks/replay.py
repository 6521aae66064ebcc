"""A saved call (a repro folder, ``repro.py``) replayed through every backend, forward and backward, in a child
process: ``python -m sdpa_tui.watch.probe.checks.replay`` reads ``{"folders": [...]}`` on stdin and answers one JSON line a
folder: ``{"replays": [BackendReplay, ...], "device": ...}`` or ``{"error": ..., "bad_input": bool}``.

Each backend runs alone (``sdpa_kernel([backend])``) on the call's own tensors and upstream gradient; its result
is named: clean, non-finite (which of out, dq, dk, dv, how many elements), out of tolerance against the float64
reference (``gradient_reference.py``), not eligible (torch's words) or error; clean or not, what ran is timed
forward and backward (CUDA events on a GPU, the host clock on the CPU) so the advice can say what a switch costs.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from ....core.calls.gradient_check import GRADIENTS, TOLERANCE, BackendReplay
from . import gradient_reference
from .gradient_sentinel import CallTensors
from .repro import CALL_FILE, FORMAT

BACKENDS = {"cuda": ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH"),
            "cpu": ("FLASH_ATTENTION", "MATH")}
TIME_S = 0.2  # each clean-enough backend is timed this long (after one warm call), at most REPEATS calls
REPEATS = 50


class BadInput(ValueError):
    """The folder is not a call sdpa-tui saved, or its tensors do not make a call."""


def load(folder: str | Path) -> tuple[CallTensors, str, str]:
    """The saved call on the device it can run on, the backend that ran it, and a note ("" or why the device
    differs)."""
    path = Path(folder)
    if not path.is_dir():
        raise BadInput(f"{folder}: no such folder")
    if not (path / CALL_FILE).is_file():
        raise BadInput(f"{folder}: no {CALL_FILE} in it: not a call saved by sdpa-tui watch")
    try:
        call = torch.load(path / CALL_FILE, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is bad input, said in one line
        raise BadInput(f"{folder}/{CALL_FILE}: not readable by torch.load: {type(exc).__name__}") from None
    if not isinstance(call, dict) or call.get("format") != FORMAT:
        raise BadInput(f"{folder}/{CALL_FILE}: not a call saved by sdpa-tui watch (format {FORMAT} expected)")
    note = ""
    device = call.get("device", "cpu")
    if device != "cpu" and not torch.cuda.is_available():
        device, note = "cpu", "saved on a GPU, replayed on the CPU (no CUDA here)"

    def tensor(name: str) -> torch.Tensor | None:
        t = call.get(name)
        if t is None:
            return None
        if not isinstance(t, torch.Tensor):
            raise BadInput(f"{folder}/{CALL_FILE}: {name} is not a tensor")
        strides = (call.get("strides") or {}).get(name)
        try:
            return torch.empty_strided(t.shape, strides, dtype=t.dtype, device=device).copy_(t)
        except (RuntimeError, TypeError):
            return t.to(device)

    q, k, v, mask, grad_out = (tensor(n) for n in ("q", "k", "v", "attn_mask", "grad_out"))
    if q is None or k is None or v is None or grad_out is None:
        raise BadInput(f"{folder}/{CALL_FILE}: q, k, v and grad_out are all needed")
    t = CallTensors(q, k, v, mask, float(call.get("dropout_p", 0.0)), bool(call.get("is_causal")), call.get("scale"),
                    bool(call.get("enable_gqa")), grad_out)
    try:
        with torch.no_grad(), sdpa_kernel([SDPBackend.MATH]):
            out = run(t)
    except RuntimeError as exc:
        raise BadInput(f"{folder}/{CALL_FILE}: the tensors do not make a call: {first_line(exc)}") from None
    if out.shape != grad_out.shape:
        raise BadInput(f"{folder}/{CALL_FILE}: grad_out is {list(grad_out.shape)}, the call's output "
                       f"{list(out.shape)}")
    return t, str(call.get("backend") or ""), note


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]


def run(t: CallTensors, q=None, k=None, v=None) -> torch.Tensor:
    return torch.nn.functional.scaled_dot_product_attention(
        t.q if q is None else q, t.k if k is None else k, t.v if v is None else v, attn_mask=t.mask,
        dropout_p=t.dropout_p, is_causal=t.causal, scale=t.scale, enable_gqa=t.gqa)


def forward_backward(t: CallTensors):
    q, k, v = (x.detach().requires_grad_() for x in (t.q, t.k, t.v))
    out = run(t, q, k, v)
    return out, torch.autograd.grad(out, (q, k, v), t.grad_out)


def timed_us(t: CallTensors) -> float:
    cuda = t.q.is_cuda
    forward_backward(t)  # warm: plans built, autotuned
    if cuda:
        torch.cuda.synchronize()
    n, start, t0 = 0, None, time.perf_counter()
    if cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
    while n < REPEATS and (n == 0 or time.perf_counter() - t0 < TIME_S):
        forward_backward(t)
        n += 1
        if cuda and n % 8 == 0:
            torch.cuda.synchronize()
    if cuda:
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3 / n
    return (time.perf_counter() - t0) * 1e6 / n


def replay(t: CallTensors, backend: str, ref) -> BackendReplay:
    with warnings.catch_warnings(record=True) as caught, sdpa_kernel([getattr(SDPBackend, backend)]):
        warnings.simplefilter("always")
        try:
            out, grads = forward_backward(t)
        except RuntimeError as exc:
            reasons = [str(w.message).strip().splitlines()[0] for w in caught if "not used because" in str(w.message)]
            if "No available kernel" in str(exc):
                return BackendReplay(backend, "not eligible", "; ".join(reasons)[:300] or first_line(exc))
            return BackendReplay(backend, "error", first_line(exc))
        named = dict(zip(("out", *GRADIENTS), (out, *grads)))
        counts = dict(zip(named, torch.stack([(~torch.isfinite(x)).sum() for x in named.values()]).tolist()))
        us = timed_us(t)
    bad = {n: int(c) for n, c in counts.items() if c}
    if bad:
        detail = ", ".join(f"{n} {c:,} of {named[n].numel():,}" for n, c in bad.items())
        return BackendReplay(backend, "non-finite", detail, us, {g: c for g, c in bad.items() if g in GRADIENTS})
    if ref is None:
        return BackendReplay(backend, "clean", "finite; not compared with float64", us)
    errors = gradient_reference.errors_against(grads, ref)
    tolerance = TOLERANCE.get(str(t.q.dtype), 5e-2)
    worst = max(errors, key=errors.get) if errors else None
    if worst is not None and errors[worst] > tolerance:
        return BackendReplay(backend, "out of tolerance", f"{worst} max rel err {errors[worst]:.1e} > {tolerance:.0e}",
                             us, max_rel_error=errors)
    return BackendReplay(backend, "clean", f"max rel err {max(errors.values(), default=0.0):.1e}", us,
                         max_rel_error=errors)


def replay_folder(folder: str) -> dict:
    try:
        t, ran, note = load(folder)
    except BadInput as exc:
        return {"error": str(exc), "bad_input": True}
    ref = None if gradient_reference.not_comparable(t) else gradient_reference.reference(t)
    replays = [replay(t, b, ref) for b in BACKENDS["cuda" if t.q.is_cuda else "cpu"]]
    if ran and not any(r.backend == ran for r in replays):
        replays.append(BackendReplay(ran, "not eligible", "not a backend of this device"))
    device = torch.cuda.get_device_name() if t.q.is_cuda else "cpu"
    return {"replays": [r.to_dict() for r in replays], "backend": ran, "device": device, "note": note,
            "shapes": {n: list(x.shape) for n, x in (("q", t.q), ("k", t.k), ("v", t.v))},
            "dtype": str(t.q.dtype)}


def main() -> int:
    payload = json.loads(sys.stdin.read() or "{}")
    for folder in payload.get("folders", ()):
        try:
            answer = replay_folder(folder)
        except Exception as exc:  # noqa: BLE001 - one folder's failure is its answer
            answer = {"error": f"{type(exc).__name__}: {first_line(exc)}"}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
