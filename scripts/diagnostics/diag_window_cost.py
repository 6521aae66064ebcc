"""What one profiler window costs a short training program, part by part (issue 39: watch's cost on a 10-s program is
its one window and the exit after it).

The program is ``training.py``'s cuda decoder (hidden 1024, 8 heads of 128, 6 layers, bf16, a batch [8, 1024], AdamW;
on the CPU its small size), trained STEPS steps. Each variant runs in a fresh process (CUPTI's first attach is per
process), alternated over ROUNDS rounds, and prints one JSON line: each step's time, the window's start, stop and
export, the trace's size and events, its parse (``json.load``) and its reading as the probe reads it (a helper
process, ``window_files.read``), and the SDPA ranges the trace holds with the kernels found inside them.

- ``plain``: no profiler.
- ``window``: watch's window as ``watch/probe/kernels/bursts.py`` makes it (CPU and CUDA activities, each SDPA call in a
  ``record_function`` range) over steps 1 and 2, stopped and exported after step 2.
- ``window-cuda``: the same with the CUDA activity alone (are the ranges and their kernels still there?).
- ``second-window``: a window over step 1, then another over step 2: what a window costs once CUPTI is attached.
- ``prewarm-thread``: an empty profiler session started and stopped on a thread of its own while the main thread
  builds the model, then ``window``: how much of the first window's cost is a one-time start that could overlap the
  program's start-up.

    python3 scripts/diagnostics/diag_window_cost.py [--device cuda] [--steps 3] [--rounds 2] [--variants a,b]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

VARIANTS = ("plain", "window", "window-cuda", "second-window", "prewarm-thread")


def child(variant: str, device: str, steps: int) -> dict:
    started = time.monotonic()
    import tempfile
    import threading

    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile, record_function

    from sdpa_tui.watch.probe.kernels import window_files

    cuda = device.startswith("cuda")
    imported = time.monotonic()
    prewarm = None
    if variant == "prewarm-thread" and cuda:
        torch.empty(0, device=device)

        def warm():
            p = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
            p.start()
            p.stop()

        prewarm = threading.Thread(target=warm)
        prewarm.start()
    (hidden, heads, layers), (batch, seq), dtype = (((1024, 8, 6), (8, 1024), torch.bfloat16) if cuda
                                                    else ((64, 4, 2), (2, 32), torch.float32))
    ranged = {"on": False}

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1, self.norm2 = torch.nn.LayerNorm(hidden), torch.nn.LayerNorm(hidden)
            self.qkv, self.out = torch.nn.Linear(hidden, 3 * hidden), torch.nn.Linear(hidden, hidden)
            self.mlp = torch.nn.Sequential(torch.nn.Linear(hidden, 4 * hidden), torch.nn.GELU(),
                                           torch.nn.Linear(4 * hidden, hidden))

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, heads, hidden // heads).permute(2, 0, 3, 1, 4)
            if ranged["on"]:  # as the probe's slow path does: the call in a range named after its signature
                with record_function(f"sdpa {tuple(q.shape)}"):
                    a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.out(a.transpose(1, 2).reshape(b, s, hidden))
            return x + self.mlp(self.norm2(x))

    with torch.device(device):
        embed = torch.nn.Embedding(1024, hidden)
        blocks = torch.nn.ModuleList(Block() for _ in range(layers))
        head = torch.nn.Linear(hidden, 1024)
        model = torch.nn.ModuleList([embed, blocks, head]).to(dtype)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, 1024, (batch, seq), device=device)
    if prewarm is not None:
        prewarm.join()
    built = time.monotonic()

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def step():
        x = embed(tokens)
        for block in blocks:
            x = block(x)
        loss = F.cross_entropy(head(x).float().view(-1, 1024), tokens.view(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    windows, profiler = [], None
    both = [ProfilerActivity.CPU, ProfilerActivity.CUDA] if cuda else [ProfilerActivity.CPU]
    plan = {"window": {0: "start", 1: "stop"}, "window-cuda": {0: "start", 1: "stop"},
            "prewarm-thread": {0: "start", 1: "stop"}, "second-window": {0: "both", 1: "both"}}.get(variant, {})
    step_s = []
    for i in range(steps):
        what = plan.get(i)
        if what in ("start", "both"):
            activities = [ProfilerActivity.CUDA] if variant == "window-cuda" and cuda else both
            profiler = profile(activities=activities)
            t0 = time.monotonic()
            profiler.start()
            windows.append({"start_s": time.monotonic() - t0})
            ranged["on"] = True
        sync()
        t0 = time.monotonic()
        step()
        sync()
        step_s.append(time.monotonic() - t0)
        if what in ("stop", "both"):
            ranged["on"] = False
            t0 = time.monotonic()
            profiler.stop()
            windows[-1]["stop_s"] = time.monotonic() - t0
            fd, path = tempfile.mkstemp(suffix=".json")
            os.close(fd)
            t0 = time.monotonic()
            profiler.export_chrome_trace(path)
            windows[-1]["export_s"] = time.monotonic() - t0
            windows[-1].update(trace_facts(path))
            t0 = time.monotonic()
            window_files.read(path)  # as the probe reads it: a helper process (which removes the file)
            windows[-1]["read_s"] = time.monotonic() - t0
    ended = time.monotonic()
    return {"variant": variant, "device": torch.cuda.get_device_name() if cuda else "cpu", "torch": torch.__version__,
            "import_s": imported - started, "build_s": built - imported, "step_s": step_s,
            "loop_s": ended - built, "windows": windows}


def trace_facts(path: str) -> dict:
    """The trace's size, its events by category, and the SDPA ranges with the GPU work correlated into them."""
    t0 = time.monotonic()
    with open(path, encoding="utf-8") as f:
        events = json.load(f).get("traceEvents", [])
    parse_s = time.monotonic() - t0
    cats: dict[str, int] = {}
    for e in events:
        cats[e.get("cat", "?")] = cats.get(e.get("cat", "?"), 0) + 1
    ranges = [e for e in events if str(e.get("name", "")).startswith("sdpa (") and e.get("cat") == "user_annotation"]
    gpu_ranges = [e for e in events if str(e.get("name", "")).startswith("sdpa (")
                  and e.get("cat") == "gpu_user_annotation"]
    launches = [e for e in events if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})]
    kernels = {e["args"]["correlation"] for e in events if e.get("cat") == "kernel" and "correlation" in e.get("args", {})}
    inside = 0
    for r in ranges:
        lo, hi, tid = r["ts"], r["ts"] + r.get("dur", 0), r.get("tid")
        inside += sum(1 for e in launches if e.get("tid") == tid and lo <= e["ts"] <= hi
                      and e["args"]["correlation"] in kernels)
    return {"trace_mb": os.path.getsize(path) / 1e6, "parse_s": parse_s, "events": len(events), "categories": cats,
            "sdpa_ranges": len(ranges), "sdpa_gpu_ranges": len(gpu_ranges), "kernels_in_ranges": inside}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.device, args.steps)), flush=True)
        return 0
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        print(f"unknown variants: {', '.join(sorted(unknown))} (known: {', '.join(VARIANTS)})", file=sys.stderr)
        return 2
    results: dict[str, list[dict]] = {v: [] for v in variants}
    for r in range(args.rounds):
        for v in variants if r % 2 == 0 else variants[::-1]:
            t0 = time.monotonic()
            proc = subprocess.run([sys.executable, __file__, "--child", v, "--device", args.device, "--steps",
                                   str(args.steps)], capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                print(f"{v}: exited {proc.returncode}: {proc.stderr[-1500:]}", file=sys.stderr)
                return 1
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            got["wall_s"] = time.monotonic() - t0
            results[v].append(got)
            print(json.dumps(got), flush=True)
    print(f"{'variant':<15} {'loop s':>7} {'steps s':>24} {'start':>6} {'stop':>6} {'export':>6} {'MB':>6} "
          f"{'parse':>6} {'read':>6} {'ranges':>6} {'gpu rng':>7} {'k in rng':>8}   (medians over rounds; each window's numbers)")
    for v, runs in results.items():
        loop = statistics.median(x["loop_s"] for x in runs)
        steps = [statistics.median(x["step_s"][i] for x in runs) for i in range(args.steps)]
        first = f"{v:<15} {loop:7.3f} {' '.join(f'{s:.3f}' for s in steps):>24}"
        wins = list(zip(*(x["windows"] for x in runs)))
        if not wins:
            print(first)
        for j, w in enumerate(wins):
            keys = ("start_s", "stop_s", "export_s", "trace_mb", "parse_s", "read_s", "sdpa_ranges", "sdpa_gpu_ranges",
                    "kernels_in_ranges")
            med = {k: statistics.median(x[k] for x in w) for k in keys}
            print(f"{first if j == 0 else '':<{len(first)}} {med['start_s']:6.3f} {med['stop_s']:6.3f} "
                  f"{med['export_s']:6.3f} {med['trace_mb']:6.1f} {med['parse_s']:6.3f} {med['read_s']:6.3f} "
                  f"{med['sdpa_ranges']:6.0f} "
                  f"{med['sdpa_gpu_ranges']:7.0f} {med['kernels_in_ranges']:8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
