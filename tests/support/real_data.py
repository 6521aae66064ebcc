"""Real data shared by the tests: kernels from the H200 traces and the H200 they came from."""

from __future__ import annotations

import json
from pathlib import Path

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.records import (
    BackendStatus,
    Dispatch,
    Environment,
    KernelCapture,
    KernelInfo,
    Ready,
    Sample,
)
from sdpa_tui.core.traces import trace
from sdpa_tui.core.workload import Workload
from support import paths

FIXTURES = paths.FIXTURES / "traces" / "h200-torch2.11"


def fixture_kernels(name: str) -> tuple[KernelInfo, ...]:
    """Every activity of the first call in a real H200 trace."""
    calls = trace.calls_of(trace.load_trace(FIXTURES / name))
    assert calls and calls[0], f"{name}: no call found"
    return tuple(calls[0])


# The H200 the fixture traces were recorded on (deviceProperties of the traces: 132 SMs,
# totalGlobalMem 150109880320 bytes, compute capability 9.0).
H200 = Environment(
    device="cuda:0",
    device_name="NVIDIA H200",
    torch_version="2.11.0+cu130",
    cuda_version="13.0",
    cudnn_version="9.19.0",
    sm="9.0",
    sm_count=132,
    memory_total_bytes=150_109_880_320,
    l2_bytes=50 * 2**20,
    default_priority_order=("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH", "CUDNN_ATTENTION"),
)
H200_ORDER_IN_FORCE = ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH")
"""The order the H200 dispatched in: torch put cuDNN first at the first SDPA call."""


def session_from_report(path: Path) -> Session:
    """A session replaying a real report JSON: its environment, verdicts, kernels and medians."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    session = Session(Workload.from_dict(doc["workload"]), tuple(Backend(b) for b in doc["enabled"]))
    cid = session.next_config_id()
    session.apply(Ready(Environment.from_dict(doc["environment"])))
    choice = doc["dispatch"]["choice"]
    session.apply(Dispatch(cid, Backend(choice) if choice else None, tuple(doc["dispatch"]["priority_order"]),
                           doc["dispatch"]["reason"]))
    for entry in doc["backends"]:
        backend = Backend(entry["backend"])
        session.apply(BackendStatus(cid, backend, entry["status"], entry["reason"], tuple(entry["details"])))
        if entry["kernels"]:
            kernels = tuple(KernelInfo.from_dict(k) for k in entry["kernels"])
            peak = None if entry["peak_mib"] is None else int(entry["peak_mib"] * 2**20)
            session.apply(KernelCapture(cid, backend, kernels, (entry["kernel_us"],), peak))
        if entry["eager_us"] is not None:
            session.apply(Sample(cid, backend, entry["gpu_us"], entry["eager_us"], "graph", 1, 1.0))
    return session
