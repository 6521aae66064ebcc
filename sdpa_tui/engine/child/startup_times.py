"""The engine's start-up phases, timed on CLOCK_MONOTONIC from the moment the UI spawned it.

Each phase is marked once, in the order it ends; only the first configuration's set-up
counts. With ``SDPA_TUI_STARTUP_TIMES=PATH`` in the environment the engine also writes each
record it sends to PATH as JSON (what ``benchmarks/monitor/ui_live.py`` reads from the live UI).
"""

from __future__ import annotations

import json
import os
import time

from ...core.protocol.records import StartupTimes

STARTUP_FILE_ENV = "SDPA_TUI_STARTUP_TIMES"

PHASES = {
    "interpreter": "the spawned Python interpreter runs the engine's entry point",
    "import_torch": "import torch (and the engine's modules)",
    "cuda_init": "device resolved: CUDA driver initialised and GPUs counted (torch.cuda.is_available)",
    "ready": "describe() (device properties, versions) and Ready sent",
    "configure": "the UI's Configure received",
    "inputs": "Q, K, V made on the device (the first allocation creates the CUDA context)",
    "dispatch": "SDPA's pick asked (torch._fused_sdp_choice)",
    "pick_probe": "the pick's eligibility probe: its first SDPA call (libraries and kernels load)",
    "pick_prepare": "the pick's warm-up calls, per-call estimate and memory peak",
    "first_sample": "the pick's first Sample sent (eager clock; the GPU/call clock follows)",
    "graph_capture_start": "the first CUDA graph capture begins (the pick's, right after its first Sample)",
    "graph_capture": "the first CUDA graph captured",
    "graph_kernels": "the first backend's kernels named from its graph's nodes (no durations; needs cuda-bindings)",
    "first_gpu_call": "the first Sample with a GPU/call value sent (the pick's, before the other backends are set up)",
    "all_first_samples": "every other backend probed, prepared and sampled once",
    "all_graph_kernels": "every running backend's kernels named from its graph's nodes (each panel names its kernels)",
    "accuracy": "float64 reference computed and every backend's accuracy sent",
    "profiler_ready": "the profiler process (on a GPU started before the engine imports torch; on the CPU after the first sample) was ready when a burst was due",
    "all_kernel_captures": "every running backend had its first kernel capture (full panels)",
}
"""Every phase name the engine marks, with what ends it (docs/lab-notes/gpu-measurements.md)."""


class StartupClock:
    def __init__(self, spawned_at: float | None = None) -> None:
        self.spawned_at = time.monotonic() if spawned_at is None else spawned_at
        self._marks: dict[str, float] = {}
        self.complete = False

    def mark(self, phase: str) -> None:
        """``phase`` ends now (a second mark of the same phase, or any after the complete
        record, is ignored)."""
        if phase not in PHASES:
            raise ValueError(f"unknown start-up phase {phase!r}")
        if not self.complete and phase not in self._marks:
            self._marks[phase] = time.monotonic()

    def has(self, phase: str) -> bool:
        return phase in self._marks

    def record(self, complete: bool = False) -> StartupTimes:
        """The phases so far; ``complete`` closes the clock (later marks are ignored)."""
        self.complete = self.complete or complete
        return StartupTimes(tuple(self._marks), tuple(round(t - self.spawned_at, 6) for t in self._marks.values()),
                            self.spawned_at, self.complete)


def write_if_asked(record: StartupTimes) -> None:
    """Write ``record`` to the file named by ``SDPA_TUI_STARTUP_TIMES``, if set (best effort)."""
    path = os.environ.get(STARTUP_FILE_ENV)
    if not path:
        return
    body = {"phases": dict(zip(record.phases, record.seconds)), "spawned_at": record.spawned_at,
            "complete": record.complete}
    try:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(body, f, indent=2)
        os.replace(tmp, path)
    except OSError:
        pass
