"""Kernel identity read from the nodes of a captured CUDA graph, against torch.profiler's for the same call.

For each SDPA backend at a few shapes: capture the call in a CUDA graph (keep_graph=True), read each kernel
node's function name (demangled), grid, block, shared memory (static + dynamic) and registers through the
driver API (cuda-bindings), and compare with the kernels torch.profiler records for the same call, eager.
Also prints when each step finished after the interpreter started, to see what a CUPTI-free identity costs.
Usage: python3 scripts/diagnostics/diag_graph_kernels.py OUT.json
"""

import json
import sys
import time

T0 = time.monotonic()
stamps = {}
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

stamps["import_torch_s"] = time.monotonic() - T0
from cuda.bindings import driver as cu  # noqa: E402

stamps["import_bindings_s"] = time.monotonic() - T0


def check(result):
    err, *rest = result
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"driver error {err}")
    return rest[0] if len(rest) == 1 else rest


def graph_kernels(graph: torch.cuda.CUDAGraph) -> list[dict]:
    handle = cu.CUgraph(graph.raw_cuda_graph())
    _, count = check(cu.cuGraphGetNodes(handle, 0))
    nodes, count = check(cu.cuGraphGetNodes(handle, count))
    out = []
    for node in nodes[:count]:
        kind = check(cu.cuGraphNodeGetType(node))
        if kind != cu.CUgraphNodeType.CU_GRAPH_NODE_TYPE_KERNEL:
            out.append({"node": kind.name})
            continue
        p = check(cu.cuGraphKernelNodeGetParams(node))
        func = p.func
        if not int(func):
            func = check(cu.cuKernelGetFunction(p.kern))
        raw = check(cu.cuFuncGetName(func))
        raw = raw.decode() if isinstance(raw, bytes) else str(raw)
        static = check(cu.cuFuncGetAttribute(cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, func))
        regs = check(cu.cuFuncGetAttribute(cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, func))
        out.append({"name": torch._C._demangle(raw), "grid": [p.gridDimX, p.gridDimY, p.gridDimZ],
                    "block": [p.blockDimX, p.blockDimY, p.blockDimZ], "shared_memory": static + p.sharedMemBytes,
                    "registers": regs})
    return out


def profiler_kernels(call) -> list[dict]:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA,
                                            torch.profiler.ProfilerActivity.CPU]) as prof:
        call()
        torch.cuda.synchronize()
    path = "/tmp/diag_graph_kernels_trace.json"
    prof.export_chrome_trace(path)
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    out = []
    for e in sorted(events, key=lambda e: e.get("ts", 0)):
        if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy"):
            a = e.get("args", {})
            out.append({"name": e["name"], "cat": e["cat"], "grid": a.get("grid"), "block": a.get("block"),
                        "shared_memory": a.get("shared memory"), "registers": a.get("registers per thread")})
    return out


SHAPES = [((4, 16, 2048, 128), torch.bfloat16, True), ((2, 8, 512, 64), torch.float16, False),
          ((1, 8, 1024, 96), torch.float32, False)]
BACKENDS = [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
            SDPBackend.MATH]
results = []
first = True
for shape, dtype, causal in SHAPES:
    q, k, v = (torch.randn(shape, device="cuda", dtype=dtype) for _ in range(3))
    for backend in BACKENDS:
        row = {"shape": shape, "dtype": str(dtype), "causal": causal, "backend": backend.name}

        def call():
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        try:
            call()
            torch.cuda.synchronize()
        except RuntimeError as exc:
            row["error"] = str(exc).splitlines()[0][:120]
            results.append(row)
            continue
        if first:
            stamps["first_call_s"] = time.monotonic() - T0
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            call()
        torch.cuda.current_stream().wait_stream(side)
        t = time.monotonic()
        graph = torch.cuda.CUDAGraph(keep_graph=True)
        with torch.cuda.graph(graph):
            call()
        captured = time.monotonic()
        row["graph"] = graph_kernels(graph)
        row["read_ms"] = (time.monotonic() - captured) * 1e3
        row["capture_ms"] = (captured - t) * 1e3
        if first:
            stamps["first_names_s"] = time.monotonic() - T0
            first = False
        row["profiler"] = profiler_kernels(call)
        graph.reset()
        g = [x for x in row["graph"] if "name" in x]
        p = [x for x in row["profiler"] if x["cat"] == "kernel"]
        row["names_equal"] = [x["name"] for x in g] == [x["name"] for x in p]
        row["launch_equal"] = [(x["grid"], x["block"], x["shared_memory"], x["registers"]) for x in g] == \
            [(x["grid"], x["block"], x["shared_memory"], x["registers"]) for x in p]
        results.append(row)
        print(shape, backend.name, "names", row["names_equal"], "launch", row["launch_equal"],
              f"read {row['read_ms']:.2f} ms", flush=True)
        if not (row["names_equal"] and row["launch_equal"]):
            print("  graph   :", g, "\n  profiler:", p, flush=True)
print(stamps)
with open(sys.argv[1], "w") as f:
    json.dump({"stamps": stamps, "torch": torch.__version__, "rows": results}, f, indent=1)
