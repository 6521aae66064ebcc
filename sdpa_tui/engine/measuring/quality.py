"""How close to the hardware and how accurate: a matmul peak, and the error against float64."""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from .clocks import synchronize
from .sdpa_call import TORCH_DTYPES, Inputs

CPU_FP32_N = 2048
"""Side of the fp32 matmul that sets the CPU ceiling (at 512 a CPU is far from its peak)."""
CPU_DTYPE_N = 512
"""Side of the workload-dtype matmul on the CPU: fp16 matmuls run at ~1 GFLOP/s on CPUs
without native fp16, so larger would take seconds; bf16 with AMX may beat fp32."""


def matmul_peak_tflops(dtype: str, device: torch.device) -> tuple[float, str]:
    """The TFLOP/s ceiling SDPA's rate is compared with, and how it was measured.

    On a GPU: a large square matmul in ``dtype``. On the CPU a ``dtype`` matmul is no
    ceiling (fp16 is emulated: SDPA's CPU kernels compute in fp32 and beat it 20-fold), so
    the ceiling is the faster of a large fp32 matmul and one in ``dtype``.
    """
    if device.type == "cuda":
        return _matmul_tflops(8192, dtype, device, repeats=5), f"8192x8192x8192 {dtype} matmul"
    measured = {"fp32": (CPU_FP32_N, _matmul_tflops(CPU_FP32_N, "fp32", device, repeats=3))}
    if dtype != "fp32":
        measured[dtype] = (CPU_DTYPE_N, _matmul_tflops(CPU_DTYPE_N, dtype, device, repeats=2))
    best = max(tflops for _, tflops in measured.values())
    if len(measured) == 1:
        return best, f"{CPU_FP32_N}x{CPU_FP32_N}x{CPU_FP32_N} fp32 matmul"
    parts = " and ".join(f"{n}x{n}x{n} {name} ({tflops:.3g} TFLOP/s)" for name, (n, tflops) in measured.items())
    return best, f"the faster of the {parts} matmuls"


def _matmul_tflops(n: int, dtype: str, device: torch.device, repeats: int) -> float:
    """TFLOP/s of an n x n x n matmul in ``dtype``, the best of ``repeats`` after warm-up."""
    a = torch.randn(n, n, device=device, dtype=TORCH_DTYPES[dtype])
    b = torch.randn(n, n, device=device, dtype=TORCH_DTYPES[dtype])
    for _ in range(3 if device.type == "cuda" else 1):
        torch.matmul(a, b)
    best = float("inf")
    for _ in range(repeats):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(10):
                torch.matmul(a, b)
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / 1000 / 10
        else:
            synchronize(device)
            t0 = time.perf_counter()
            torch.matmul(a, b)
            seconds = time.perf_counter() - t0
        best = min(best, seconds)
    del a, b
    return 2 * n**3 / best / 1e12


def reference_output(inputs: Inputs, **mask: object) -> torch.Tensor:
    """SDPA in float64 with the MATH backend (the only one that takes float64), on the same inputs; ``mask``:
    ``attn_mask`` and ``is_causal`` in place of the workload's."""
    q, k, v = (t.detach().double() for t in (inputs.q, inputs.k, inputs.v))
    with sdpa_kernel([SDPBackend.MATH]):
        return F.scaled_dot_product_attention(q, k, v, **{**inputs.sdpa_kwargs(), **mask})


def compare(out: torch.Tensor, ref: torch.Tensor) -> tuple[float, float]:
    """Max absolute error, and max absolute error over the reference's max magnitude."""
    diff = (out.detach().double() - ref).abs().max().item()
    scale = ref.abs().max().item()
    return diff, diff / scale if scale else float("nan")


GRADS = ("dq", "dk", "dv")


def reference_grads(inputs: Inputs) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dq, dk, dv of SDPA in float64 (MATH) for the workload's output gradient, on the same inputs."""
    q, k, v = (t.detach().double().requires_grad_(True) for t in (inputs.q, inputs.k, inputs.v))
    with sdpa_kernel([SDPBackend.MATH]), torch.enable_grad():
        out = F.scaled_dot_product_attention(q, k, v, **inputs.sdpa_kwargs())
        return torch.autograd.grad(out, (q, k, v), inputs.grad_out.double())


def nonfinite(named: dict[str, torch.Tensor]) -> tuple[str, ...]:
    """The names whose tensor holds a NaN or an Inf."""
    return tuple(name for name, t in named.items() if not bool(torch.isfinite(t).all()))
