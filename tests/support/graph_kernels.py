"""The kernels of a CUDA graph's nodes and of the profiler's burst, per backend, as recorded on the H100
(``fixtures/graph_kernels_h100.json``)."""

from __future__ import annotations

import json

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.protocol.records import KernelInfo
from sdpa_tui.engine.measuring.graph_nodes import MEMSET_NAME
from support.paths import FIXTURES

FIXTURE = json.loads((FIXTURES / "graph_kernels_h100.json").read_text())


def graph_kernels(backend: Backend) -> tuple[KernelInfo, ...]:
    row = next(r for r in FIXTURE["rows"] if r["backend"] == backend.value)
    return tuple(KernelInfo(MEMSET_NAME, 0.0, "gpu_memset") if "node" in k else
                 KernelInfo(k["name"], 0.0, grid=tuple(k["grid"]), block=tuple(k["block"]),
                            shared_memory=k["shared_memory"], registers=k["registers"]) for k in row["graph"])


def profiled_kernels(backend: Backend) -> tuple[KernelInfo, ...]:
    row = next(r for r in FIXTURE["rows"] if r["backend"] == backend.value)
    return tuple(KernelInfo(k["name"], 10.0 + i, k["cat"], tuple(k["grid"]) if k["grid"] else None,
                            tuple(k["block"]) if k["block"] else None, k["shared_memory"], k["registers"])
                 for i, k in enumerate(row["profiler"]))
