"""Where does the engine's host memory go? Each suspect, alone, repeated many times.

The soak (``soak.py``) shows whether the engine's RSS grows; this finds what makes it grow.
Each experiment runs in a fresh process of its own (spawned), repeats one thing the engine
does, and every few repetitions records the process's RSS, what glibc malloc holds in use
and holds free (``mallinfo2``), and Python's allocated blocks:

- ``profiler``    torch.profiler alone: a profile of 5 SDPA calls and its Chrome trace, as
                  torch leaves it (the profile object is only freed by the cyclic collector)
- ``burst``       the engine's profiler burst (``profiling.burst``, which collects it at once),
                  cycling over the backends that run
- ``capture``     a CUDA graph capture and release per backend (what each Configure does)
- ``slices``      the engine's timing slices (an eager loop, graph replays) per backend, in a
                  process that never ran the profiler
- ``slices-after-burst``  the same, the graphs captured, then one profiler burst per backend
- ``slices-graphs-after-burst``  the same, the graphs captured after the burst (as in the
                  engine, where each Configure captures new graphs after earlier bursts)
- ``configure``   the engine's whole Configure path (``Engine._configure``), then a timing
                  slice and a profiler burst per backend, for each key press of soak.py
- ``configure-live``  the same with 20 slices per backend, one of them a burst (about what
                  5 s of live sampling between two key presses makes)
- ``configure-live-no-bursts``  the same without the burst

``-teardown`` after a name: the same, with Kineto told to detach CUPTI after each trace
(``TEARDOWN_CUPTI=1``).

    python3 benchmarks/soak/engine_memory.py --device cuda --repeats 600
    python3 benchmarks/soak/engine_memory.py --device cpu --repeats 100 --only profiler burst

Prints, per experiment, RSS at the start, middle and end and the growth per 1,000
repetitions over the second half, and writes JSON (default
benchmarks/results/engine-memory-<device>-<date>.json).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import datetime as dt
import gc
import json
import multiprocessing as mp
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py

from recorded import command_line  # noqa: E402

TEARDOWN = "-teardown"
EXPERIMENTS = ("profiler", "burst", "capture", "slices", "slices-after-burst", "slices-graphs-after-burst",
               "slices-graphs-after-burst" + TEARDOWN, "configure", "configure-live", "configure-live-no-bursts",
               "configure-live" + TEARDOWN)
LIVE_SLICES = 20
CHECKPOINTS = 20
SHAPE = dict(batch=1, heads=2, kv_heads=2, seq=128, kv_seq=128, head_dim=64)


# ---------------------------------------------------------------------------- memory readings
class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                 "fordblks", "keepcost")]


def _libc() -> Any:
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name else None


LIBC = _libc()


def malloc_mib() -> tuple[float | None, float | None]:
    """(bytes in use, bytes free but kept) by glibc malloc, in MiB; None without mallinfo2."""
    if LIBC is None or not hasattr(LIBC, "mallinfo2"):
        return None, None
    LIBC.mallinfo2.restype = _Mallinfo2
    info = LIBC.mallinfo2()
    return (info.uordblks + info.hblkhd) / 2**20, info.fordblks / 2**20


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmRSS in /proc/self/status")


def reading(repeats: int, t0: float) -> dict[str, Any]:
    in_use, free = malloc_mib()
    return {"repeats": repeats, "elapsed_s": round(time.monotonic() - t0, 2), "rss_mib": round(rss_mib(), 2),
            "malloc_in_use_mib": in_use and round(in_use, 2), "malloc_free_mib": free and round(free, 2),
            "python_blocks": sys.getallocatedblocks()}


# ---------------------------------------------------------------------------- the experiments
class NullChannel:
    def send(self, record: object) -> None:
        pass


class NullCapture:
    def read_lines(self) -> list[str]:
        return []


def running_backends(device: Any) -> list[tuple[Any, Any]]:
    """(backend, step) for each backend that runs the small workload on this device."""
    from sdpa_tui.core.backends import ALL_BACKENDS
    from sdpa_tui.core.workload import Workload
    from sdpa_tui.engine.measuring import eligibility
    from sdpa_tui.engine.measuring.sdpa_call import Inputs

    inputs = Inputs.make(Workload(**SHAPE), device)
    return [(b, inputs.step()) for b in ALL_BACKENDS if eligibility.probe(inputs, b, device).status == "ok"]


def soak_states() -> list[tuple[Any, tuple[Any, ...]]]:
    """(workload, enabled backends) after each key press of soak.py's rounds, three rounds (the
    dtype comes back to where it started): flags off and on, causal, dtype, direction, seq."""
    import dataclasses

    from sdpa_tui.core.backends import ALL_BACKENDS
    from sdpa_tui.core.workload import Workload

    states, workload = [], Workload(**SHAPE)
    for dtype in ("bf16", "fp32", "fp16"):
        for off in ALL_BACKENDS:
            states.append((workload, tuple(b for b in ALL_BACKENDS if b is not off)))
            states.append((workload, ALL_BACKENDS))
        states.append((dataclasses.replace(workload, mask="causal"), ALL_BACKENDS))
        states.append((workload, ALL_BACKENDS))
        workload = dataclasses.replace(workload, dtype=dtype)
        states.append((workload, ALL_BACKENDS))
        states.append((dataclasses.replace(workload, direction="fwd+bwd"), ALL_BACKENDS))
        states.append((workload, ALL_BACKENDS))
        states.append((dataclasses.replace(workload, seq=2 * workload.seq, kv_seq=2 * workload.kv_seq), ALL_BACKENDS))
        states.append((workload, ALL_BACKENDS))
    return states


def _prepare_slices(name: str, device: Any, state: dict[str, Any]) -> None:
    """Graphs captured as a Configure does; then, but for ``slices``, one burst per backend."""
    from sdpa_tui.engine.measuring import clocks
    from sdpa_tui.engine.measuring.sdpa_call import forced
    from sdpa_tui.engine.profiler import profiling

    def bursts() -> None:
        for backend, step in state["runs"]:
            with forced((backend,)):
                profiling.burst(step, device, 5)

    if name == "slices-graphs-after-burst":
        bursts()
    state["graphs"] = []
    for backend, step in state["runs"]:
        with forced((backend,)):
            state["graphs"].append(clocks.GraphClock(step, device, 20.0))
    if name == "slices-after-burst":
        bursts()


def one_repeat(name: str, device: Any, state: dict[str, Any], i: int) -> None:
    from sdpa_tui.engine.measuring import clocks
    from sdpa_tui.engine.measuring.sdpa_call import forced
    from sdpa_tui.engine.profiler import profiling

    if name == "profiler":
        from torch.profiler import ProfilerActivity, profile

        backend, step = state["runs"][i % len(state["runs"])]
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        with forced((backend,)), profile(activities=activities) as prof:
            for _ in range(5):
                step()
        prof.export_chrome_trace(state["trace_path"])
    elif name == "burst":
        backend, step = state["runs"][i % len(state["runs"])]
        with forced((backend,)):
            profiling.burst(step, device, 5)
    elif name == "capture":
        for backend, step in state["runs"]:
            with forced((backend,)):
                clocks.GraphClock(step, device, 20.0).release()
    elif name.startswith("slices"):
        for (backend, step), graph in zip(state["runs"], state["graphs"]):
            with forced((backend,)):
                clocks.eager_us(step, device, 100)
                if graph is not None:
                    graph.sample(4)
    elif name.startswith("configure"):
        from sdpa_tui.core.protocol.engine_commands import Configure

        engine = state["engine"]
        workload, enabled = state["states"][i % len(state["states"])]
        live = name != "configure"
        # A burst comes as each backend's second slice (profile_every_s=0: every other slice)
        engine.handle(Configure(i + 1, workload, enabled, profile_every_s=3600.0 if live else 0.0))
        if name == "configure-live-no-bursts":
            for run in engine.runs.values():
                run.next_profile = float("inf")
        for _ in range((LIVE_SLICES if live else 2) * len(engine.runs)):
            engine._measure_next()
    else:
        raise ValueError(name)


def setup(name: str, device: Any) -> dict[str, Any]:
    """What one experiment's repetitions work on: an engine, or the backends' steps (and graphs)."""
    from sdpa_tui.engine.child.measuring_loop import Engine

    state: dict[str, Any] = {}
    if name.startswith("configure"):
        from sdpa_tui.engine.profiler.profiler_client import ProfilerClient

        state["engine"] = Engine(NullChannel(), str(device), NullCapture())
        state["engine"].device = device
        # bursts run in the engine's profiler process, as in the app (this process measures none)
        state["engine"].profiler = ProfilerClient(str(device))
        state["engine"].profiler.wait_ready()
        state["states"] = soak_states()
    else:
        state["runs"] = running_backends(device)
        state["trace_path"] = os.path.join(tempfile.mkdtemp(prefix="sdpa-tui-memory-"), "trace.json")
    if name.startswith("slices"):
        _prepare_slices(name, device, state)
    return state


def run_experiment(experiment: str, device_request: str, repeats: int, queue: Any) -> None:
    """The body of one spawned process: repeat, record, report through ``queue``."""
    name = experiment.removesuffix(TEARDOWN)
    if name != experiment:
        os.environ["TEARDOWN_CUPTI"] = "1"  # read by Kineto: detach CUPTI after each trace
    import torch

    from sdpa_tui.engine.measuring.environment import resolve_device

    device, _ = resolve_device(device_request)
    if (name == "capture" or name.startswith("slices")) and device.type != "cuda":
        queue.put({"experiment": experiment, "device": str(device), "skipped": "CUDA graphs need a GPU"})
        return
    state = setup(name, device)
    if name != "profiler":  # torch alone, as in any process; the others as in the engine's
        gc.freeze()  # as the engine process does once torch is imported (worker.py)
    every = max(1, repeats // CHECKPOINTS)
    t0 = time.monotonic()
    readings = [reading(0, t0)]
    for i in range(repeats):
        one_repeat(name, device, state, i)
        if (i + 1) % every == 0 or i + 1 == repeats:
            readings.append(reading(i + 1, t0))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    queue.put({"experiment": experiment, "device": str(device),
               "backends": [b.value for b, _ in state.get("runs", [])], "readings": readings})


# ---------------------------------------------------------------------------- summary
def growth_per_1000(readings: list[dict[str, Any]], key: str) -> float | None:
    """Least-squares slope of ``key`` against repetitions over the second half, per 1,000."""
    points = [(r["repeats"], r[key]) for r in readings[len(readings) // 2:] if r[key] is not None]
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return None if sxx == 0 else 1000.0 * sum((x - mx) * (y - my) for x, y in points) / sxx


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    r = result["readings"]
    return {
        "rss_first_mib": r[0]["rss_mib"], "rss_middle_mib": r[len(r) // 2]["rss_mib"], "rss_last_mib": r[-1]["rss_mib"],
        "rss_growth_mib_per_1000": growth_per_1000(r, "rss_mib"),
        "malloc_in_use_growth_mib_per_1000": growth_per_1000(r, "malloc_in_use_mib"),
        "malloc_free_last_mib": r[-1]["malloc_free_mib"],
        "seconds": r[-1]["elapsed_s"],
    }


def print_table(results: list[dict[str, Any]], repeats: int) -> None:
    fmt = lambda v: "n/a" if v is None else f"{v:,.1f}"  # noqa: E731
    print(f"\n{repeats} repeats each; growth is the least-squares slope over the second half, MiB per 1,000 repeats")
    print(f"{'experiment':<12}{'RSS first':>11}{'middle':>9}{'last':>9}{'RSS growth':>12}"
          f"{'malloc use':>12}{'malloc free':>13}{'seconds':>9}")
    for res in results:
        if "summary" not in res:
            print(f"{res['experiment']:<12}{res.get('skipped') or res.get('error')}")
            continue
        s = res["summary"]
        print(f"{res['experiment']:<12}{fmt(s['rss_first_mib']):>11}{fmt(s['rss_middle_mib']):>9}"
              f"{fmt(s['rss_last_mib']):>9}{fmt(s['rss_growth_mib_per_1000']):>12}"
              f"{fmt(s['malloc_in_use_growth_mib_per_1000']):>12}{fmt(s['malloc_free_last_mib']):>13}"
              f"{fmt(s['seconds']):>9}")


def collect(queue: Any, procs: list[Any]) -> list[dict[str, Any]]:
    """One result per process; a process that died without one is reported, not waited for."""
    import queue as queue_module

    results: list[dict[str, Any]] = []
    names = {p.pid: p.name for p in procs}
    while len(results) < len(procs):
        try:
            results.append(queue.get(timeout=5.0))
        except queue_module.Empty:
            reported = {r["experiment"] for r in results}
            for p in procs:
                if p.exitcode not in (None, 0) and names[p.pid] not in reported:
                    results.append({"experiment": names[p.pid], "error": f"process exited with {p.exitcode}"})
    for p in procs:
        p.join()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default cuda)")
    parser.add_argument("--repeats", type=int, default=600, help="repetitions per experiment (default 600)")
    parser.add_argument("--only", nargs="+", choices=EXPERIMENTS, default=list(EXPERIMENTS))
    parser.add_argument("--parallel", action="store_true",
                        help="run the experiments at the same time (each is its own process)")
    parser.add_argument("--json", default=None, help="results file "
                        "(default benchmarks/results/engine-memory-<device>-<date>.json)")
    args = parser.parse_args(argv)
    if args.repeats < 2:
        parser.error("--repeats must be at least 2")

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    started = dt.datetime.now()
    batches = [args.only] if args.parallel else [[name] for name in args.only]
    results = []
    for batch in batches:
        procs = [ctx.Process(target=run_experiment, args=(n, args.device, args.repeats, queue), name=n)
                 for n in batch]
        for p in procs:
            p.start()
        for result in collect(queue, procs):
            if "readings" in result:
                result["summary"] = summarize(result)
            results.append(result)
            print(f"  {result['experiment']}: {result.get('skipped') or result.get('error') or 'done'}", flush=True)
    results.sort(key=lambda r: EXPERIMENTS.index(r["experiment"]))
    print_table(results, args.repeats)

    import torch

    path = Path(args.json) if args.json else (
        REPO / "benchmarks" / "results" / f"engine-memory-{args.device.replace(':', '')}-{started.date()}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "date": started.isoformat(timespec="seconds"),
        "command": command_line(argv),
        "python": platform.python_version(), "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() and args.device != "cpu" else None,
        "repeats": args.repeats, "results": results,
    }, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
