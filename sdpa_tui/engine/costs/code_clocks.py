"""The lab's clocks around an alternative's code (FlexAttention's, packed attention's): what the measuring children
time once the code has run and its output was found equal to the call's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from ..measuring.call_memory import peak_extra_bytes
from ..measuring.clocks import GraphClock, calls_for, eager_us
from .compiled_cost import profiled_kernel_us

SAMPLES = 15
"""Samples per clock: at least the advice's ``MIN_SAMPLES``, so the noise rule can judge the alternative."""
EAGER_TARGET_US = 2_000.0
"""One eager sample lasts about this long (at most 64 calls)."""
GRAPH_REPLAYS = 4
Spec = TypeVar("Spec")


@dataclass(frozen=True)
class CodeClocks:
    """µs per call: ``eager`` (back-to-back calls host-timed, one synchronize) and, on a GPU, ``gpu`` (a CUDA graph of
    the calls replayed; empty, and ``note`` says why, where it could not be captured) and ``kernel_us``
    (torch.profiler's summed GPU activities per call); the peak memory beyond the inputs."""

    eager: tuple[float, ...]
    gpu: tuple[float, ...]
    kernel_us: float | None
    peak_mib: float | None
    note: str = ""


def timed(step: Callable[[], object], device: torch.device) -> CodeClocks:
    """``step`` (one call, forward or forward and backward, already warmed up) on the lab's clocks."""
    peak = peak_extra_bytes(step, device)
    per_call = eager_us(step, device, 3)
    calls = calls_for(EAGER_TARGET_US, per_call, 64)
    eager = tuple(eager_us(step, device, calls) for _ in range(SAMPLES))
    gpu: tuple[float, ...] = ()
    kernel, note = None, ""
    if device.type == "cuda":
        clock = GraphClock(step, device, per_call)
        if clock.method == "graph":
            gpu = tuple(clock.sample(GRAPH_REPLAYS) for _ in range(SAMPLES))
        else:
            note = f"no GPU/call: the CUDA graph could not be captured ({clock.capture_error})"
        clock.release()
        kernel = profiled_kernel_us(step)
    return CodeClocks(eager, gpu, kernel, None if peak is None else peak / 2**20, note)


def answer_line(measure: Callable[[Spec], Any], spec: Spec, expected: tuple[type[Exception], ...]) -> dict[str, Any]:
    """One spec's answer: ``{"cost": measure(spec).to_dict()}``, or ``{"error": ...}``: an ``expected`` exception's own
    words (a code whose output differs), any other's type and first line (one workload's failure; the next is
    measured)."""
    try:
        return {"cost": measure(spec).to_dict()}
    except expected as exc:
        return {"error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - one workload's failure is its answer
        return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}
