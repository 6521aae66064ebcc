"""Fidelity check: do the engine's clocks agree with independent measurements?

For each shape and backend this runs the real engine (``sdpa_tui.engine.host.headless.measure``,
a child process) and then, in this process and with its own code, measures the same call:

* CUPTI: torch.profiler (ProfilerActivity.CUDA) over N calls. Summed: the self device time
  of every GPU activity (kineto activity types ``kernel``, ``gpu_memset``, ``gpu_memcpy``;
  never ``gpu_user_annotation``), divided by N -- the engine's kernel clock definition,
  "every GPU activity of one call". Median over the repeats (the first profile is discarded:
  CUPTI starts up during it).
* Replay: a CUDA graph of ``--graph-calls`` calls (a count the engine does not use),
  replayed M times between CUDA events (M sized from the engine's GPU/call so that one
  sample lasts about 5 ms); median per-call time over the repeats.
* One replay: the same graph replayed ONCE between CUDA events (the graph's launch latency falls
  inside them), median over the repeats: a second, cruder probe of the same clock.
* The GPU's SM clock (NVML) during each: the engine's medians and this process's, since a time taken
  at a lower clock reads slower (on an H100 the clock fell from 1,980 to 1,695 MHz under a sustained
  heavy call, docs/lab-notes/clocks.md).

``--runs R`` measures every shape R times (a fresh engine each), so the spread shows. Shapes take
``causal`` and ``bwd`` (forward and backward, timed as the engine does: ``torch.autograd.grad``).

PASS when |engine - independent| <= max(5 %, 1 us) on both clocks (kernel against CUPTI, GPU/call
against the replay). Exit 0: all pass;
1: no CUDA; 2: bad arguments; 3: a comparison failed or could not be made.
Run from the repo root: ``python3 benchmarks/clocks/fidelity.py [--shapes ...]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py

from recorded import command_line  # noqa: E402

from sdpa_tui.core.backends import ALL_BACKENDS, Backend, parse_backend_list  # noqa: E402
from sdpa_tui.core.workload import Workload  # noqa: E402

ACTIVITY_KINDS = ("kernel", "gpu_memset", "gpu_memcpy")
REL_TOL, ABS_TOL_US = 0.05, 1.0


DEFAULT_SHAPES = ("2,8,512,64,fp16;1,16,8192,128,bf16,causal;4,16,1024,128,bf16,bwd;2,8,2048,256,bf16;"
                  "2,8,1024,64,fp32;1,32,4096,64,fp16,causal,bwd")
"""Six shapes: forward and forward+backward, fp16/bf16/fp32, head dims 64 to 256, 512 to 8k."""


def parse_shapes(text: str) -> list[Workload]:
    """``"B,H,N,D,dtype[,causal][,bwd];..."`` -> workloads (self-attention)."""
    shapes = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        f = [x.strip() for x in part.split(",")]
        flags = set(f[5:])
        if len(f) < 5 or not flags <= {"causal", "bwd"} or len(flags) != len(f[5:]):
            raise ValueError(f"shape {part!r}: expected B,H,N,D,dtype[,causal][,bwd]")
        b, h, n, d = (int(x) for x in f[:4])
        shapes.append(Workload(batch=b, heads=h, kv_heads=h, seq=n, kv_seq=n, head_dim=d, dtype=f[4],
                               mask="causal" if "causal" in flags else "none",
                               direction="fwd+bwd" if "bwd" in flags else "fwd"))
    return shapes


def label(w: Workload) -> str:
    return (f"{w.batch}x{w.heads}x{w.seq}x{w.head_dim} {w.dtype}" + (" causal" if w.causal else "")
            + (" fwd+bwd" if w.backward else ""))


def within(engine: float | None, ref: float | None) -> bool:
    return engine is not None and ref is not None and abs(engine - ref) <= max(REL_TOL * ref, ABS_TOL_US)


def clock_note(engine: dict, ind: dict, kernel_pass: bool, gpu_pass: bool) -> str:
    """For each failed comparison whose two sides ran at SM clocks over half the tolerance apart, the clocks (a time
    taken at a lower clock reads slower: an H200's CUPTI profile of a heavy call ran at 1,845 MHz against the
    engine's 1,980); empty where none did."""
    ours, theirs = engine.get("sm_mhz") or {}, ind.get("sm_mhz") or {}
    pairs = []
    if not kernel_pass:
        pairs.append(("kernel", ours.get("kernel"), "CUPTI", theirs.get("cupti")))
    if not gpu_pass:
        pairs.append(("GPU/call", ours.get("gpu"), "replay", theirs.get("replay")))
    notes = [f"SM clock: the engine's {clock} at {a:.0f} MHz, the {probe} at {b:.0f} MHz "
             f"({abs(a - b) / max(a, b):.1%} apart)"
             for clock, a, probe, b in pairs if a and b and abs(a - b) > REL_TOL * max(a, b) / 2]
    return "; ".join(notes)


def cupti_per_call(torch, call, calls: int) -> tuple[float, dict[str, int]]:
    """Self device time of the GPU activities of ``calls`` calls, divided by ``calls``."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    total, kinds = 0.0, {}
    for e in prof.events():
        kind = getattr(e, "activity_type", None) or ""  # older torch: device type only
        if e.device_type != DeviceType.CUDA or e.is_user_annotation or (kind and kind not in ACTIVITY_KINDS):
            continue
        total += e.self_device_time_total
        kinds[kind or "device"] = kinds.get(kind or "device", 0) + 1
    return total / calls, kinds


def captured(torch, call, calls: int):
    """``calls`` calls captured in a CUDA graph (warmed up on a side stream first), replayed once."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            call()
    graph.replay()
    torch.cuda.synchronize()
    return graph


def replay_per_call(torch, call, calls: int, replays: int, repeats: int) -> tuple[list[float], list[float]]:
    """Per-call times of a CUDA graph of ``calls`` calls: ``replays`` replays per sample, then one replay per sample."""
    graph = captured(torch, call, calls)
    samples, once = [], []
    for count, out in ((replays, samples), (1, once)):
        for _ in range(repeats):
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(count):
                graph.replay()
            end.record()
            end.synchronize()
            out.append(start.elapsed_time(end) * 1000.0 / (count * calls))
    graph.reset()
    return samples, once


def independent(w: Workload, backend, args, hint_us: float) -> dict:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[w.dtype]
    gen = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = (torch.randn(w.batch, w.heads, w.seq, w.head_dim, generator=gen, device="cuda", dtype=dtype)
               .requires_grad_(w.backward) for _ in range(3))
    grad = torch.randn(w.batch, w.heads, w.seq, w.head_dim, generator=gen, device="cuda", dtype=dtype)

    def call():
        out = F.scaled_dot_product_attention(q, k, v, is_causal=w.causal)
        return torch.autograd.grad(out, (q, k, v), grad) if w.backward else out

    replays = max(1, min(100, math.ceil(5_000 / (args.graph_calls * max(hint_us, 1e-3)))))
    with sdpa_kernel([getattr(SDPBackend, backend.value)]):
        for _ in range(3):
            call()
        profiles = [cupti_per_call(torch, call, args.profile_calls) for _ in range(args.repeats + 1)][1:]
        kernel_mhz = sm_mhz(torch)
        replay, once = replay_per_call(torch, call, args.graph_calls, replays, args.repeats)
        replay_mhz = sm_mhz(torch)
    return {"cupti_us": statistics.median(p[0] for p in profiles), "cupti_samples": [p[0] for p in profiles],
            "activities_per_profile": profiles[-1][1], "profile_calls": args.profile_calls,
            "replay_us": statistics.median(replay), "replay_samples": replay,
            "one_replay_us": statistics.median(once), "one_replay_samples": once,
            "graph_calls": args.graph_calls, "replays_per_sample": replays,
            "sm_mhz": {"cupti": kernel_mhz, "replay": replay_mhz}}


def sm_mhz(torch) -> int | None:
    try:
        return int(torch.cuda.clock_rate())
    except Exception:  # noqa: BLE001 - no NVML
        return None


def mhz(engine: dict, ind: dict) -> str:
    """The SM clocks: the engine's GPU/call samples' median, then this process's during its replay."""
    ours, theirs = (engine.get("sm_mhz") or {}).get("gpu"), (ind.get("sm_mhz") or {}).get("replay")
    return "-" if ours is None and theirs is None else f"{ours or 0:.0f}/{theirs or 0:.0f}"


def spread_table(results: list[dict]):
    """Per shape and backend over the runs: the engine's GPU/call against each probe, the ratios' range."""
    from rich import box
    from rich.table import Table

    table = Table(title="Over the runs: engine / independent, min-max (median)", box=box.SIMPLE_HEAD)
    for col in ("shape", "backend", "runs", "kernel/CUPTI", "GPU/call/replay", "GPU/call/1 replay", "passed"):
        table.add_column(col, justify="left" if col in ("shape", "backend") else "right", no_wrap=True)
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in results:
        if "independent" in r:
            groups.setdefault((r["label"], r["backend"]), []).append(r)

    def span(rows: list[dict], clock: str, probe: str) -> str:
        ratios = [r["engine"][clock] / r["independent"][probe] for r in rows
                  if r["engine"].get(clock) and r["independent"].get(probe)]
        if not ratios:
            return "-"
        return f"{min(ratios):.3f}-{max(ratios):.3f} ({statistics.median(ratios):.3f})"

    for (shape, backend), rows in groups.items():
        passed = sum(r["status"] == "PASS" for r in rows)
        table.add_row(shape, Backend(backend).label, str(len(rows)), span(rows, "kernel_us", "cupti_us"),
                      span(rows, "gpu_us", "replay_us"), span(rows, "gpu_us", "one_replay_us"),
                      f"{passed}/{len(rows)}")
    return table


def median_of(summary) -> float | None:
    return summary.median if summary is not None else None


def run(args) -> int:
    import torch
    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from sdpa_tui.engine.host.headless import EngineFailed, measure

    console = Console()
    console.width = max(console.width, 180)  # piped output defaults to 80 columns: never truncate numbers
    if not torch.cuda.is_available():  # asks the driver; creates no CUDA context here
        why = "this torch build has no CUDA" if torch.version.cuda is None else "no CUDA GPU is visible"
        print(f"fidelity: CUDA is unavailable ({why}); this check needs an NVIDIA GPU.", file=sys.stderr)
        return 1
    results, env = [], None
    for run_index, w in ((i, w) for i in range(args.runs) for w in args.shapes):
        with console.status(f"engine: {w.describe()}") as status:
            try:
                session = measure(w, args.backends, "cuda", args.duration,
                                  on_progress=lambda p: status.update(f"engine: {w.describe()}: {p.text}"))
            except EngineFailed as exc:
                results += [{"run": run_index, "shape": w.describe(), "label": label(w), "backend": b.value,
                             "status": "engine failed", "reason": str(exc)} for b in args.backends]
                continue
        env = session.environment or env
        # The engine process has exited: from here on only this process uses the GPU.
        for row in (r for r in session.rows() if r.backend in args.backends):
            res = {"run": run_index, "shape": w.describe(), "label": label(w), "workload": w.to_dict(),
                   "backend": row.backend.value,
                   "status": row.status, "reason": row.reason,
                   "engine": {"kernel_us": median_of(row.kernel_us), "gpu_us": median_of(row.gpu_us),
                              "eager_us": median_of(row.eager_us),
                              "gpu_method": session.backends[row.backend].gpu_method,
                              "kernel_samples": row.kernel_us.count if row.kernel_us else 0,
                              "sm_mhz": {"gpu": row.gpu_sm_mhz, "kernel": row.kernel_sm_mhz}}}
            if row.status == "ok":
                try:
                    with console.status(f"parent: {w.describe()} {row.backend.label}"):
                        res["independent"] = ind = independent(w, row.backend, args, res["engine"]["gpu_us"] or 100.0)
                    res["kernel_pass"] = within(res["engine"]["kernel_us"], ind["cupti_us"])
                    res["gpu_pass"] = within(res["engine"]["gpu_us"], ind["replay_us"])
                    res["status"] = "PASS" if res["kernel_pass"] and res["gpu_pass"] else "FAIL"
                    if res["status"] == "FAIL":
                        res["reason"] = clock_note(res["engine"], ind, res["kernel_pass"], res["gpu_pass"])
                except Exception as exc:  # noqa: BLE001 - OOM, capture refusals: say so, go on
                    res["status"], res["reason"] = "parent error", str(exc).splitlines()[0]
            results.append(res)
        torch.cuda.empty_cache()  # give the next shape's engine the memory back

    title = f"Engine vs independent clocks, us per call; PASS within max({REL_TOL:.0%}, {ABS_TOL_US:g} us)"
    table = Table(title=title, caption="kernel, GPU/call, eager: the engine's medians", box=box.SIMPLE_HEAD)
    table.add_column("shape", no_wrap=True)
    table.add_column("backend", no_wrap=True)
    for col in ("kernel", "CUPTI", "ratio", "GPU/call", "replay", "ratio", "1 replay", "ratio", "MHz", "eager"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    fmt = lambda x: "-" if x is None else f"{x:.1f}"  # noqa: E731
    ratio = lambda a, b: "-" if a is None or not b else f"{a / b:.3f}"  # noqa: E731
    notes = []
    for r in results:
        e, i = r.get("engine", {}), r.get("independent", {})
        colour = {"PASS": "green", "FAIL": "red"}.get(r["status"], "yellow")
        mark = ""
        if r["status"] != "PASS" and r.get("reason"):
            if r["reason"] not in notes:
                notes.append(r["reason"])
            mark = escape(f" [{notes.index(r['reason']) + 1}]")
        table.add_row(r["label"], Backend(r["backend"]).label, fmt(e.get("kernel_us")), fmt(i.get("cupti_us")),
                      ratio(e.get("kernel_us"), i.get("cupti_us")), fmt(e.get("gpu_us")), fmt(i.get("replay_us")),
                      ratio(e.get("gpu_us"), i.get("replay_us")), fmt(i.get("one_replay_us")),
                      ratio(e.get("gpu_us"), i.get("one_replay_us")), mhz(e, i), fmt(e.get("eager_us")),
                      f"[{colour}]{r['status']}[/{colour}]{mark}")
    console.print(table)
    for n, note in enumerate(notes, 1):
        console.print(f"[{n}] {note}", markup=False, highlight=False)
    if args.runs > 1:
        console.print(spread_table(results))

    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    report = {"date": dt.datetime.now().isoformat(timespec="seconds"), "command": command_line(args.argv),
              "versions": {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": cudnn,
                           "gpu": torch.cuda.get_device_name(0)},
              "engine_environment": dataclasses.asdict(env) if env else None,
              "tolerance": {"relative": REL_TOL, "absolute_us": ABS_TOL_US},
              "settings": {"duration_s": args.duration, "repeats": args.repeats, "runs": args.runs,
                           "profile_calls": args.profile_calls, "graph_calls": args.graph_calls,
                           "cupti_sums": list(ACTIVITY_KINDS)},
              "results": results}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    console.print(f"written: {args.json}")
    checked = [r for r in results if r["status"] != "not_eligible"]
    return 0 if checked and all(r["status"] == "PASS" for r in checked) else 3


def main(argv: list[str] | None = None) -> int:
    stamp = dt.datetime.now().strftime("%Y-%m-%d-%H%M%S")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default=DEFAULT_SHAPES,
                   help="';'-separated B,H,N,D,dtype[,causal][,bwd] (default: %(default)s)")
    p.add_argument("--runs", type=int, default=1, help="measure every shape this many times, a fresh engine each")
    p.add_argument("--backends", default=",".join(b.short for b in ALL_BACKENDS),
                   help="comma list of cudnn,flash,efficient,math (default: all)")
    p.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / f"fidelity-{stamp}.json",
                   help="where the JSON goes (default: benchmarks/results/fidelity-<date>.json)")
    p.add_argument("--repeats", type=int, default=5, help="profiles and replay samples per backend (default 5)")
    p.add_argument("--profile-calls", type=int, default=10, help="calls per profile, N (default 10)")
    p.add_argument("--graph-calls", type=int, default=20, help="calls captured in the graph (default 20)")
    p.add_argument("--duration", type=float, default=3.0, help="engine seconds per shape once ready (default 3)")
    args = p.parse_args(argv)
    try:
        args.shapes, args.backends = parse_shapes(args.shapes), parse_backend_list(args.backends)
        if min(args.repeats, args.profile_calls, args.graph_calls, args.runs) < 1 or args.duration <= 0:
            raise ValueError("--repeats, --profile-calls, --graph-calls, --runs and --duration must be positive")
    except ValueError as exc:
        p.exit(2, f"fidelity: error: {exc}\n")
    args.argv = argv  # for the result's command line
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
