"""Real data shared by the tests: kernels from the H200 traces and the H200 they came from."""

from __future__ import annotations

from pathlib import Path

from sdpa_tui.core import trace
from sdpa_tui.core.records import Environment, KernelInfo

FIXTURES = Path(__file__).parent / "fixtures" / "traces" / "h200-torch2.11"


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
    priority_order=("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH"),
)
