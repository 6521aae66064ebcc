"""Where a traced step's host time goes, per thread: a torch.profiler chrome trace (``hf_padded_packed.py --trace``)
summed without a viewer. For each CPU thread (the main thread runs the forward, autograd's the backward): its span,
its CUDA runtime calls by name (count, total, longest) and every runtime call over ``--long`` µs with the top-level op
it ran in; then the top-level ops by total time. A wait for the GPU on the host shows as a long synchronize or
device-to-host copy, or as launches that take long (the launch queue full).

    python scripts/diagnostics/diag_trace_host.py TRACE.json [TRACE.json ...] [--long 100] [--top 15]
"""

from __future__ import annotations

import argparse
import collections
import json


def summary(path: str, long_us: float, top: int) -> None:
    with open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    host = [e for e in events if e.get("cat") in ("cpu_op", "cuda_runtime", "user_annotation")]
    print(f"== {path}: {len(events)} events")
    by_thread: dict[object, list[dict]] = collections.defaultdict(list)
    for e in host:
        by_thread[e["tid"]].append(e)
    for tid, evs in sorted(by_thread.items(), key=lambda kv: min(e["ts"] for e in kv[1])):
        start = min(e["ts"] for e in evs)
        end = max(e["ts"] + e["dur"] for e in evs)
        ops = sorted((e for e in evs if e["cat"] == "cpu_op"), key=lambda e: e["ts"])
        tops, reach = [], -1.0
        for e in ops:  # ops not inside an earlier one: the thread's top level
            if e["ts"] >= reach:
                tops.append(e)
                reach = e["ts"] + e["dur"]
        runtime = [e for e in evs if e["cat"] == "cuda_runtime"]
        print(f"-- thread {tid}: span {end - start:,.0f} µs, {len(ops)} ops ({len(tops)} top-level), "
              f"{len(runtime)} runtime calls, {sum(e['dur'] for e in runtime):,.0f} µs in them")
        calls = collections.defaultdict(list)
        for e in runtime:
            calls[e["name"]].append(e["dur"])
        for name, durs in sorted(calls.items(), key=lambda kv: -sum(kv[1]))[:8]:
            print(f"   {name:<36} n={len(durs):<5} total {sum(durs):>10,.0f} µs  longest {max(durs):>9,.0f}")
        for e in sorted(runtime, key=lambda e: e["ts"]):
            if e["dur"] >= long_us:
                inside = next((t["name"] for t in tops if t["ts"] <= e["ts"] <= t["ts"] + t["dur"]), "?")
                print(f"   long: {e['name']} {e['dur']:,.0f} µs at +{e['ts'] - start:,.0f} µs in {inside}")
        totals = collections.defaultdict(lambda: [0, 0.0])
        for e in tops:
            totals[e["name"]][0] += 1
            totals[e["name"]][1] += e["dur"]
        for name, (n, dur) in sorted(totals.items(), key=lambda kv: -kv[1][1])[:top]:
            print(f"   top-level {name[:60]:<60} n={n:<5} {dur:>10,.0f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+")
    parser.add_argument("--long", type=float, default=100.0, help="list runtime calls at least this long (µs)")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    for path in args.traces:
        summary(path, args.long, args.top)


if __name__ == "__main__":
    main()
