"""Read, in this process, the environment that decides SDPA's dispatch (``core/dispatch_environment.py``): the engine at
start, before any SDPA call; a watched program at its first SDPA call and at its end (it may change it)."""

from __future__ import annotations

import ctypes
import importlib.util
import os

import torch

from ...core.dispatch_environment import (
    CudnnLoaded,
    DispatchEnvironment,
    FlashImpl,
    is_shadowed,
    own_mapped_libraries,
    sdpa_variables,
    version_text,
    wheel_copy,
)


def read() -> DispatchEnvironment:
    return DispatchEnvironment(cudnn_loaded(), flash_impl(), sdp_flags(), sdpa_variables(os.environ))


def cudnn_loaded() -> CudnnLoaded | None:
    """The cuDNN library whose symbols this process uses (torch's CUDA build maps it at import), or None."""
    mapped = own_mapped_libraries()
    if not mapped:
        return None
    path = _in_use() or mapped[0]
    loaded = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    built = None
    compile_version = getattr(getattr(torch._C, "_cudnn", None), "getCompileVersion", None)
    if compile_version is not None:
        try:
            built = version_text(tuple(compile_version()))
        except Exception:  # noqa: BLE001 - private API
            built = None
    wheel = wheel_copy(_wheel_dirs(), path)
    others = tuple(p for p in mapped if os.path.realpath(p) != os.path.realpath(path))
    return CudnnLoaded(path, version_text(loaded), built, wheel, is_shadowed(path, wheel), others)


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p), ("dli_sname", ctypes.c_char_p),
                ("dli_saddr", ctypes.c_void_p)]


def _in_use() -> str | None:
    """The file that provides ``cudnnGetVersion`` in the global scope (where torch's libraries find it: a copy in
    ``LD_PRELOAD`` comes first), by ``dladdr``; None where that cannot be told."""
    try:
        process = ctypes.CDLL(None)
        address = ctypes.cast(process.cudnnGetVersion, ctypes.c_void_p).value
        info = _DlInfo()
        if address and process.dladdr(ctypes.c_void_p(address), ctypes.byref(info)) and info.dli_fname:
            return os.fsdecode(info.dli_fname)
    except (AttributeError, OSError):
        pass
    return None


def _wheel_dirs() -> list[str]:
    try:
        spec = importlib.util.find_spec("nvidia.cudnn")
    except (ImportError, ValueError):
        return []
    return list(spec.submodule_search_locations or ()) if spec else []


def flash_impl() -> FlashImpl | None:
    """The Flash implementation in use where torch can swap it (``activate_flash_attention_impl``), else None."""
    attention = torch.nn.attention
    current = getattr(attention, "current_flash_attention_impl", None)
    listed = getattr(attention, "list_flash_attention_impls", None)
    if current is None or listed is None:
        return None
    try:
        return FlashImpl(current(), tuple(listed()))
    except Exception:  # noqa: BLE001 - a new API
        return None


def sdp_flags() -> dict[str, bool]:
    cuda = torch.backends.cuda
    return {
        "flash": cuda.flash_sdp_enabled(),
        "mem_efficient": cuda.mem_efficient_sdp_enabled(),
        "math": cuda.math_sdp_enabled(),
        "cudnn": cuda.cudnn_sdp_enabled(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "deterministic_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_enabled": bool(torch.backends.cudnn.enabled),
    }
