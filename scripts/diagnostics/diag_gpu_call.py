"""Why GPU/call can read below the kernel sum, and why a one-replay probe reads above GPU/call (issue 39).

For each shape and backend, in one process, the same call measured six ways:

* ``tool``: the engine's own GraphClock (``engine/measuring/clocks.py``): K calls in a graph, replayed
  back to back between CUDA events, as the engine samples it;
* ``one_replay``: an independent probe: 20 calls captured, ONE replay timed with events (the graph's launch
  latency falls inside the events);
* ``one_replay_queued``: the same replay, queued behind a spin kernel so the start event fires only once the
  graph is already queued (no launch latency inside the events);
* ``cupti_graph``: CUPTI's view of one replay of the 20-call graph: span first kernel start -> last kernel end,
  divided by 20; the sum of the kernels' durations / 20; how many kernels start before the previous one ended
  (overlap: programmatic dependent launch or concurrent kernels);
* ``cupti_eager``: the kernel clock's definition: every GPU activity of N eager calls, durations summed / N,
  and the eager span / N;
* SM clock (NVML) before and after each backend.

Prints a table and writes JSON. ``python3 scripts/diagnostics/diag_gpu_call.py OUT.json``.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from sdpa_tui.engine.measuring.clocks import GraphClock, calls_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "clocks"))
from fidelity import captured  # noqa: E402 - benchmarks/ is no package

BACKENDS = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
SHAPES = [  # B, H, N, D, dtype, causal, backward
    (2, 8, 512, 64, "fp16", False, False),
    (1, 16, 8192, 128, "bf16", True, False),
    (4, 16, 1024, 128, "bf16", False, True),
    (2, 8, 2048, 256, "bf16", False, False),
    (2, 8, 1024, 64, "fp32", False, False),
    (1, 32, 4096, 64, "fp16", True, True),
    (8, 16, 512, 128, "bf16", True, True),
]
KINDS = ("kernel", "gpu_memset", "gpu_memcpy")
PROBE_CALLS = 20


def sm_clock() -> int | None:
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        return pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
    except Exception:  # noqa: BLE001
        return None


def make_step(shape, backend):
    b, h, n, d, dt, causal, backward = shape
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=DTYPES[dt], generator=g).requires_grad_(backward)
               for _ in range(3))
    grad = torch.randn(b, h, n, d, device="cuda", dtype=DTYPES[dt], generator=g)

    def step():
        with sdpa_kernel([backend]):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            if backward:
                return torch.autograd.grad(out, (q, k, v), grad)
            return out
    return step


def timed(fn, queued_us: float = 0.0) -> float:
    """Milliseconds between events around ``fn``; ``queued_us``: a spin kernel first, so the host has queued
    ``fn``'s work before the start event is reached."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    if queued_us:
        torch.cuda._sleep(int(queued_us * 1980))  # cycles at about 1.98 GHz
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def gpu_events(fn):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        trace = json.load(open(f.name))
    return sorted((e for e in trace["traceEvents"] if e.get("cat") in KINDS and e.get("ph") == "X"),
                  key=lambda e: e["ts"])


def cupti(fn, calls):
    evs = gpu_events(fn)
    if not evs:
        return None
    span = (max(e["ts"] + e["dur"] for e in evs) - evs[0]["ts"]) / calls
    summed = sum(e["dur"] for e in evs) / calls
    overlaps, overlap_us, end = 0, 0.0, evs[0]["ts"] + evs[0]["dur"]
    for e in evs[1:]:
        if e["ts"] < end:
            overlaps += 1
            overlap_us += min(end, e["ts"] + e["dur"]) - e["ts"]
        end = max(end, e["ts"] + e["dur"])
    return {"span_us": span, "sum_us": summed, "kernels_per_call": len(evs) / calls, "overlaps": overlaps,
            "overlap_us_per_call": overlap_us / calls, "names": sorted({e["name"][:90] for e in evs})[:6]}


def measure(shape, name):
    step = make_step(shape, BACKENDS[name])
    try:
        for _ in range(3):
            step()
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"}
    clock0 = sm_clock()
    eager_ms = timed(lambda: [step() for _ in range(20)]) / 20
    tool = GraphClock(step, torch.device("cuda"), eager_ms * 1000)
    replays = calls_for(2000.0, eager_ms * 1000 * tool.calls, 50)
    tool.sample(replays)
    tool_us = [tool.sample(replays) for _ in range(7)]
    graph = captured(torch, step, PROBE_CALLS)
    one = [timed(graph.replay) * 1000 / PROBE_CALLS for _ in range(7)]
    queued = [timed(graph.replay, queued_us=200) * 1000 / PROBE_CALLS for _ in range(7)]
    multi = [timed(lambda: [graph.replay() for _ in range(10)]) * 1000 / PROBE_CALLS / 10 for _ in range(7)]
    cupti_graph = cupti(graph.replay, PROBE_CALLS)
    cupti_graph2 = cupti(graph.replay, PROBE_CALLS)
    eager_cupti = cupti(lambda: [step() for _ in range(10)], 10)
    eager_cupti = cupti(lambda: [step() for _ in range(10)], 10)
    clock1 = sm_clock()
    tool.release()
    graph.reset()
    med = statistics.median
    return {"tool_calls_per_graph": tool.calls, "tool_replays": replays, "tool_method": tool.method,
            "tool_us": med(tool_us), "tool_spread": [min(tool_us), max(tool_us)],
            "one_replay_us": med(one), "one_replay_spread": [min(one), max(one)],
            "one_replay_queued_us": med(queued), "ten_replays_us": med(multi),
            "cupti_graph": cupti_graph2 or cupti_graph, "cupti_eager": eager_cupti,
            "eager_events_us": eager_ms * 1000, "sm_mhz": [clock0, clock1]}


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "diag-gpu-call.json"
    rows = []
    print(f"{torch.cuda.get_device_name()} torch {torch.__version__} cuDNN {torch.backends.cudnn.version()}")
    print(f"{'shape':<34}{'backend':<10}{'tool':>9}{'1 replay':>10}{'queued':>9}{'10 rep':>9}{'g.span':>9}"
          f"{'g.sum':>9}{'g.ovl':>6}{'e.sum':>9}{'e.span':>9}{'K':>4}  MHz")
    for shape in SHAPES:
        b, h, n, d, dt, causal, backward = shape
        label = f"[{b},{h},{n},{d}] {dt}{' causal' if causal else ''}{' fwd+bwd' if backward else ''}"
        for name in BACKENDS:
            r = measure(shape, name)
            r.update(shape=label, backend=name)
            rows.append(r)
            if "error" in r:
                print(f"{label:<34}{name:<10} {r['error']}")
                continue
            g, e = r["cupti_graph"] or {}, r["cupti_eager"] or {}
            print(f"{label:<34}{name:<10}{r['tool_us']:>9.2f}{r['one_replay_us']:>10.2f}{r['one_replay_queued_us']:>9.2f}"
                  f"{r['ten_replays_us']:>9.2f}{g.get('span_us', 0):>9.2f}{g.get('sum_us', 0):>9.2f}"
                  f"{g.get('overlaps', 0):>6}{e.get('sum_us', 0):>9.2f}{e.get('span_us', 0):>9.2f}"
                  f"{r['tool_calls_per_graph']:>4}  {r['sm_mhz']}")
            torch.cuda.empty_cache()
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, open(out, "w"),
              indent=1)


if __name__ == "__main__":
    main()
