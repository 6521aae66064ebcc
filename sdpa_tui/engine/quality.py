"""How close to the hardware and how accurate: a matmul peak, and the error against float64."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from .calls import TORCH_DTYPES, Inputs
from .clocks import synchronize


def matmul_peak_tflops(dtype: str, device: torch.device) -> tuple[float, str]:
    """TFLOP/s of a large square matmul in ``dtype``, timed after warm-up (the best of a few)."""
    n = 8192 if device.type == "cuda" else 512
    a = torch.randn(n, n, device=device, dtype=TORCH_DTYPES[dtype])
    b = torch.randn(n, n, device=device, dtype=TORCH_DTYPES[dtype])
    for _ in range(3):
        torch.matmul(a, b)
    best = float("inf")
    for _ in range(5 if device.type == "cuda" else 2):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(10):
                torch.matmul(a, b)
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / 1000 / 10
        else:
            import time

            synchronize(device)
            t0 = time.perf_counter()
            torch.matmul(a, b)
            seconds = time.perf_counter() - t0
        best = min(best, seconds)
    del a, b
    return 2 * n**3 / best / 1e12, f"{n}x{n}x{n} {dtype} matmul"


def reference_output(inputs: Inputs) -> torch.Tensor:
    """SDPA in float64 with the MATH backend (the only one that takes float64), on the same inputs."""
    q, k, v = (t.detach().double() for t in (inputs.q, inputs.k, inputs.v))
    with sdpa_kernel([SDPBackend.MATH]):
        return F.scaled_dot_product_attention(q, k, v, **inputs.sdpa_kwargs())


def compare(out: torch.Tensor, ref: torch.Tensor) -> tuple[float, float]:
    """Max absolute error, and max absolute error over the reference's max magnitude."""
    diff = (out.detach().double() - ref).abs().max().item()
    scale = ref.abs().max().item()
    return diff, diff / scale if scale else float("nan")
