"""Kernel identity without a profiler: the nodes of the CUDA graph the GPU/call clock already captures.

Each kernel node gives its function's name (demangled as CUPTI demangles: ``abi::__cxa_demangle``),
grid, block, shared memory (the function's static plus the launch's dynamic) and registers per
thread, through the CUDA driver API (NVIDIA's ``cuda-bindings``). No durations: those come from the
profiler's bursts, which start seconds later (CUPTI's first session costs 6.5 s in a fresh process on
the H100). On the H100 (torch 2.11, 2026-11-25, ``scripts/diagnostics/diag_graph_kernels.py``) the names, grid,
block and shared memory equalled torch.profiler's for every backend at three shapes; registers
equalled for every attention kernel, GEMM and softmax, and read 2-6 lower than CUPTI's for 12 small
elementwise kernels of MATH (``docs/lab-notes/gpu-measurements.md``, "Kernels named from the CUDA graph").

Where ``cuda-bindings`` is missing or any driver call fails, the answer is ``()``: the panels wait
for the profiler's burst, as before.
"""

from __future__ import annotations

import torch

from ...core.protocol.records import KernelInfo

MEMSET_NAME = "Memset (Device)"  # what CUPTI calls a memset on the device


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError:
        return None
    return driver


def available() -> bool:
    """Whether kernel nodes can be read here (``cuda-bindings`` imports)."""
    return _driver() is not None


def _ok(driver, result):
    err, *rest = result
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver: {err}")
    return rest[0] if len(rest) == 1 else rest


def _demangle(name: str) -> str:
    demangle = getattr(torch._C, "_demangle", None)  # c10::demangle: abi::__cxa_demangle, as Kineto's
    return demangle(name) if demangle is not None else name


def _kernel(driver, node) -> KernelInfo:
    params = _ok(driver, driver.cuGraphKernelNodeGetParams(node))
    func = params.func if int(params.func) else _ok(driver, driver.cuKernelGetFunction(params.kern))
    raw = _ok(driver, driver.cuFuncGetName(func))
    attribute = driver.CUfunction_attribute
    static = _ok(driver, driver.cuFuncGetAttribute(attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, func))
    registers = _ok(driver, driver.cuFuncGetAttribute(attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, func))
    return KernelInfo(
        name=_demangle(raw.decode() if isinstance(raw, bytes) else str(raw)), duration_us=0.0, category="kernel",
        grid=(params.gridDimX, params.gridDimY, params.gridDimZ),
        block=(params.blockDimX, params.blockDimY, params.blockDimZ),
        shared_memory=int(static) + int(params.sharedMemBytes), registers=int(registers),
    )


def kernels_of(graph: torch.cuda.CUDAGraph) -> tuple[KernelInfo, ...]:
    """The kernels and memsets of a graph captured with ``keep_graph=True``, in node order (durations 0)."""
    driver = _driver()
    if driver is None:
        return ()
    try:
        handle = driver.CUgraph(graph.raw_cuda_graph())
        _, count = _ok(driver, driver.cuGraphGetNodes(handle, 0))
        nodes, count = _ok(driver, driver.cuGraphGetNodes(handle, count))
        kinds = driver.CUgraphNodeType
        out = []
        for node in nodes[:count]:
            kind = _ok(driver, driver.cuGraphNodeGetType(node))
            if kind == kinds.CU_GRAPH_NODE_TYPE_KERNEL:
                out.append(_kernel(driver, node))
            elif kind == kinds.CU_GRAPH_NODE_TYPE_MEMSET:
                out.append(KernelInfo(MEMSET_NAME, 0.0, category="gpu_memset"))
        return tuple(out)
    except Exception:  # noqa: BLE001 - an identity we cannot read is left to the profiler, never a failure
        return ()
