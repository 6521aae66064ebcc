"""What the engine runs on: device, torch, CUDA and cuDNN versions, and what else decides dispatch."""

from __future__ import annotations

import os
import platform

import torch

from ...core.protocol.records import Environment
from . import cpu_allocator
from .dispatch_readings import read
from .eligibility import priority_order


def resolve_device(requested: str) -> tuple[torch.device, tuple[str, ...]]:
    """``auto``: the first GPU, else the CPU, saying why. ``cuda``/``cuda:N`` must exist.

    The CLI checks the request before starting the engine (``sdpa_tui.telemetry.device_choice``);
    this is the last word, with torch's own view.
    """
    if requested == "cpu":
        return torch.device("cpu"), (f"CPU mode: {_why_no_gpu() or '--device cpu'}",)
    why = _why_no_gpu()
    if why:
        if requested != "auto":
            raise RuntimeError(f"{requested} requested, but {why}")
        return torch.device("cpu"), (f"CPU mode: {why}",)
    device = torch.device("cuda:0" if requested in ("auto", "cuda") else requested)
    if device.index is not None and device.index >= torch.cuda.device_count():
        raise RuntimeError(f"{requested} requested, but only {torch.cuda.device_count()} GPU(s) are visible")
    return device, ()


def make_current(device: torch.device) -> None:
    """Make ``device`` the process's current GPU, before any CUDA work.

    CUDA events, graphs' capture streams and the default stream belong to the current device:
    an engine on cuda:1 that left cuda:0 current timed cuda:0's idle stream (its GPU/call and
    matmul peak were nonsense, seen on two H200s) and made a context there.
    """
    if device.type == "cuda" and device.index is not None:  # bare "cuda" is the current GPU already
        torch.cuda.set_device(device)


def _why_no_gpu() -> str:
    """Why no GPU can be used here ("" when one can)."""
    if torch.version.cuda is None and torch.version.hip is None:
        return "this torch build has no CUDA"
    if not torch.cuda.is_available():
        return "no CUDA GPU is visible"
    return ""


def describe(device: torch.device, notes: tuple[str, ...]) -> Environment:
    d = read()  # before any SDPA call in this process: the flags as found at start
    dispatch = {"cudnn_loaded": d.cudnn_loaded, "flash_impl": d.flash_impl, "sdp_flags": d.sdp_flags,
                "sdpa_env": d.sdpa_env}
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    cudnn_text = f"{cudnn // 10000}.{cudnn % 10000 // 100}.{cudnn % 100}" if cudnn else None
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return Environment(
            device=str(device),
            device_name=props.name,
            torch_version=torch.__version__,
            cuda_version=torch.version.cuda,
            cudnn_version=cudnn_text,
            sm=f"{props.major}.{props.minor}",
            sm_count=props.multi_processor_count,
            memory_total_bytes=props.total_memory,
            l2_bytes=getattr(props, "L2_cache_size", None),
            default_priority_order=priority_order(),  # before any SDPA call in this process
            notes=notes,
            **dispatch,
        )
    return Environment(
        device="cpu",
        device_name=_cpu_name(),
        torch_version=torch.__version__,
        cuda_version=torch.version.cuda,
        cudnn_version=cudnn_text,
        cpu_threads=torch.get_num_threads(),
        cpu_allocator=cpu_allocator.regime(),
        default_priority_order=priority_order(),  # the CPU has one too (empty JSON list before)
        notes=notes,
        **dispatch,
    )


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or f"{os.cpu_count()} CPU threads"
