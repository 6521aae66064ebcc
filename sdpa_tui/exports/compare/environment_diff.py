"""What differs between two reports' environments that can change SDPA's pick or its kernels, most likely first.

Read from the documents' ``environment`` objects as plain JSON (older reports lack the dispatch fields: those
differences are then unknown, not absent). The order: the process-wide SDPA flags and deterministic mode
decide eligibility outright; the GPU architecture decides which kernels exist; the cuDNN library (its version,
or a copy in place of the wheel's) decides cuDNN's kernels and whether it is eligible; the Flash
implementation; torch's variables; then torch and CUDA themselves.
"""

from __future__ import annotations

from typing import Any

_FLAGS = ("flash", "mem_efficient", "math", "cudnn", "deterministic", "cudnn_deterministic", "cudnn_enabled")
_LOADER = ("LD_LIBRARY_PATH", "LD_PRELOAD")


def environment_differences(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[str]:
    """One line per difference, ``what: A → B``."""
    a, b = a or {}, b or {}
    out: list[str] = []
    fa, fb = a.get("sdp_flags") or {}, b.get("sdp_flags") or {}
    for name in _FLAGS:
        if name in fa and name in fb and fa[name] != fb[name]:
            out.append(f"{name} flag at start: {_on(fa[name])} → {_on(fb[name])}")
    if a.get("sm") != b.get("sm") or a.get("device_name") != b.get("device_name"):
        out.append(f"GPU: {_gpu(a)} → {_gpu(b)}")
    ca, cb = a.get("cudnn_loaded") or {}, b.get("cudnn_loaded") or {}
    va, vb = ca.get("version") or a.get("cudnn_version"), cb.get("version") or b.get("cudnn_version")
    if va != vb:
        out.append(f"cuDNN: {va or 'none'} → {vb or 'none'}")
    if ca and cb and bool(ca.get("shadowed")) != bool(cb.get("shadowed")):
        out.append(f"cuDNN library: {_cudnn_where(ca)} → {_cudnn_where(cb)}")
    ia, ib = a.get("flash_impl"), b.get("flash_impl")
    if ia is not None and ib is not None and (ia.get("current") != ib.get("current")):
        out.append(f"Flash implementation: {ia.get('current') or 'torch default'} → {ib.get('current') or 'torch default'}")
    if "sdpa_env" in a and "sdpa_env" in b:
        ea, eb = a["sdpa_env"] or {}, b["sdpa_env"] or {}
        for name in sorted(set(ea) | set(eb), key=lambda n: (n in _LOADER, n)):
            if ea.get(name) != eb.get(name):
                out.append(f"{name}: {ea.get(name, 'unset')} → {eb.get(name, 'unset')}")
    for key, label in (("torch_version", "torch"), ("cuda_version", "CUDA")):
        if a.get(key) != b.get(key):
            out.append(f"{label}: {a.get(key) or 'none'} → {b.get(key) or 'none'}")
    return out


def _on(value: Any) -> str:
    return "on" if value else "off"


def _gpu(env: dict[str, Any]) -> str:
    return f"{env.get('device_name') or 'unknown'} (sm {env.get('sm') or '?'})"


def _cudnn_where(cudnn: dict[str, Any]) -> str:
    return f"{cudnn.get('path')} (not the wheel's)" if cudnn.get("shadowed") else "the wheel's"
