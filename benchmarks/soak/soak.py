"""Soak the live app: does anything grow while it runs for a long time?

Runs the real app (``make_app``: engine process, NVML poller) headless with Textual's
``run_test``, presses keys as a restless user would (flags, causal, dtype, direction, seq ×2
/ ÷2) and, every few seconds, records what could leak: the UI process's RSS, open file
descriptors and threads, the engine's RSS and descriptors, the GPU memory NVML sees the
engine use, engine restarts, and history rows. Optionally kills the engine now and then to
soak the restart path too.

    python3 benchmarks/soak/soak.py --device cuda --minutes 60
    python3 benchmarks/soak/soak.py --device cpu --minutes 60 --kill-engine-every 120
    python3 benchmarks/soak/soak.py --device cuda --minutes 8 --flip-every 0      # a user who only watches
    python3 benchmarks/soak/soak.py --device cuda --minutes 8 --keys-for 120      # keys, then watching
    python3 benchmarks/soak/soak.py --device cpu --minutes 70 --history-rows 512  # the history's bound in minutes
    python3 benchmarks/soak/soak.py --device cuda --minutes 8 --engine-memory-mib 0 \
        --cycle fp16,bf16,fp32 --cycle-seqs 128,256 --dwell 20             # the same workloads, again and again

With ``--cycle`` the keys visit a fixed list of workloads (each dtype with each length) in a
loop, ``--dwell`` seconds each, instead of the restless presses; the summary then adds the
engine's RSS at the end of each visit of each workload (``soak_cycle.py``): a first-use cost
shows as visit 2, 3, ... ≈ visit 1, growth as a rising line. Use it with ``--engine-memory-mib 0``
(its default there), so that no replacement hides growth.

Each sample also reads the UI process's memory by kind (``soak_rows.memory_reading``: anonymous and file-backed RSS,
pymalloc's arenas and their used bytes, Python's allocated blocks, what malloc has handed out and holds), and goes
to a file as it is taken, not to a list in this process (``soak_rows.RowLog``).

Prints first / last / max and a least-squares slope per hour for each series, and writes
benchmarks/results/soak-<device>-<date>.json and .csv. This process is the UI process: its
own RSS, descriptors and threads are the UI's.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import datetime as dt
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py

from recorded import run_header  # noqa: E402
from soak_cycle import Stop, format_table, keys_between, later_minus_first, parse_cycle, per_visit  # noqa: E402
from soak_rows import HEAP_SERIES, RowLog, memory_reading, status_mib  # noqa: E402

from sdpa_tui.commands.monitor import make_app  # noqa: E402
from sdpa_tui.core.backends import ALL_BACKENDS  # noqa: E402
from sdpa_tui.core.lab.history_ring import RECENT, TAIL_EVERY, TAIL_MAX, HistoryRing  # noqa: E402
from sdpa_tui.core.protocol.engine_commands import ENGINE_MEMORY_MIB  # noqa: E402
from sdpa_tui.core.protocol.engine_events import EngineDied, EngineRecycled, EngineStarting  # noqa: E402
from sdpa_tui.core.workload import Workload  # noqa: E402

SIZE = (120, 40)
FLIPS = ("f", "f", "e", "e", "c", "c", "m", "m", "k", "k", "d", "b", "b", "plus", "minus")
"""One round of key presses; the pairs put each setting back, so the workload stays small.
``d`` cycles the dtype (three presses make a full turn, over three rounds)."""
SERIES = ("ui_rss_mib", *HEAP_SERIES, "ui_fds", "ui_threads", "engine_rss_mib", "engine_fds", "engine_gpu_mib",
          "profiler_rss_mib", "engine_restarts", "engine_recycles", "history_rows")
FIRST_SAMPLE_TIMEOUT_S = 180.0


# ------------------------------------------------------------------------------- /proc reads
def rss_mib(pid: int | str) -> float | None:
    return status_mib(pid, "VmRSS")["VmRSS"]


def open_fds(pid: int | str) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def children(pid: int) -> list[int]:
    """The engine's children: its profiler process, while one runs."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return []


def alive(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return fields[0] not in ("Z", "X")


class GpuMemory:
    """GPU memory NVML sees a process use (None on the CPU or where NVML cannot tell)."""

    def __init__(self, device: str) -> None:
        self.reader = None
        self.why = "--device cpu"
        if device != "cpu":
            from sdpa_tui.telemetry.nvml import NvmlReader

            index = int(device.split(":", 1)[1]) if ":" in device else 0
            self.reader = NvmlReader(index)
            self.why = None if self.reader.open() else (self.reader.reason or "NVML unavailable")

    def of(self, pid: int | None) -> float | None:
        if self.reader is None or self.why or pid is None:
            return None
        processes = self.reader.snapshot(own_pids={pid}).processes or ()
        used = [p.used_bytes for p in processes if p.pid == pid and p.used_bytes is not None]
        return sum(used) / 2**20 if used else None

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()


# ------------------------------------------------------------------------------- the run
class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        # the samples go to a file as they are taken: kept here, they grew the UI process being measured
        self.rows = RowLog.temporary()
        self.starts = 0
        self.recycles = 0
        self.gave_up = False
        self.kills = 0
        self.flips = 0
        self.engine_pids: set[int] = set()
        self.stop = asyncio.Event()
        self.gpu = GpuMemory(args.device)
        self.cycle: list[Stop] = parse_cycle(args.cycle, args.cycle_seqs) if args.cycle else []
        self.at = 0  # the stop of the cycle the app is at
        self.visits: dict[str, int] = {}  # visits so far of each stop

    def watch_engine_events(self, app: Any) -> None:
        """Count engine starts (restarts = starts - 1) and replacements (recycles) as the
        supervisor reports them."""
        supervisor = app.engine
        forward = supervisor.on_event

        def on_event(event: object) -> None:
            if isinstance(event, EngineStarting):
                self.starts += 1
            elif isinstance(event, EngineDied) and event.retry_in_s is None:
                self.gave_up = True
            elif isinstance(event, EngineRecycled):
                self.recycles += 1
            forward(event)

        supervisor.on_event = on_event

    async def sample(self, app: Any, t0: float) -> dict[str, Any]:
        pid = app.engine.engine_pid
        if pid:
            self.engine_pids.add(pid)
        gpu = await asyncio.to_thread(self.gpu.of, pid)  # NVML calls take milliseconds
        profilers = children(pid) if pid else []
        profiler_rss = [r for r in map(rss_mib, profilers) if r is not None]
        row = {
            "elapsed_s": round(time.monotonic() - t0, 2),
            "ui_rss_mib": rss_mib("self"),
            **memory_reading(),
            "ui_fds": open_fds("self"),
            "ui_threads": len(os.listdir("/proc/self/task")),
            "engine_pid": pid,
            "engine_rss_mib": rss_mib(pid) if pid else None,
            "engine_fds": open_fds(pid) if pid else None,
            "engine_gpu_mib": gpu,
            "profiler_pids": profilers,  # the engine's profiler process (kernel capture), if one runs now
            "profiler_rss_mib": sum(profiler_rss) if profiler_rss else None,
            "engine_restarts": max(0, self.starts - 1 - self.recycles),  # after deaths
            "engine_recycles": self.recycles,
            "history_rows": sum(len(s.history) for s in app.session.backends.values()),
            "workload": app.session.workload.describe(),
        }
        if self.cycle:
            stop = self.cycle[self.at]
            row.update(cycle_stop=stop.label, visit=self.visits[stop.label])
        self.rows.append(row)
        return row

    async def run(self) -> None:
        args = self.args
        first = self.cycle[0] if self.cycle else Stop(args.dtype, args.seq)
        workload = Workload(batch=args.batch, heads=args.heads, kv_heads=args.heads, seq=first.seq,
                            kv_seq=first.seq, head_dim=args.head_dim, dtype=first.dtype)
        if self.cycle:
            self.visits[first.label] = 1
        app = make_app(workload, ALL_BACKENDS, args.device, os.path.join(tempfile.gettempdir(), "sdpa-tui-soak-exports"),
                       engine_memory_mib=args.engine_memory_mib)
        self.watch_engine_events(app)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.stop.set)  # stop early, still write the results
        try:
            async with app.run_test(size=SIZE) as pilot:
                await self._wait_for_first_sample(app, pilot)
                t0 = time.monotonic()
                end = t0 + args.minutes * 60.0
                next_flip = t0 + args.flip_every if args.flip_every > 0 and not self.cycle else float("inf")
                next_stop = t0 + args.dwell if self.cycle else float("inf")
                next_sample = t0
                next_kill = t0 + args.kill_engine_every if args.kill_engine_every > 0 else float("inf")
                while not self.stop.is_set():
                    now = time.monotonic()
                    if now >= next_sample:
                        row = await self.sample(app, t0)
                        self._progress(row)
                        next_sample += args.sample_every
                    if now >= end:
                        break
                    if now >= next_flip:
                        await pilot.press(FLIPS[self.flips % len(FLIPS)])
                        self.flips += 1
                        next_flip += args.flip_every
                        if args.keys_for and next_flip > t0 + args.keys_for:
                            next_flip = float("inf")  # from here on the user only watches
                    if now >= next_stop:
                        if self.rows.last_elapsed_s is None or now - t0 - self.rows.last_elapsed_s > 0.5:
                            self._progress(await self.sample(app, t0))  # the visit's settled RSS
                        await self._next_stop(app, pilot)
                        next_stop += args.dwell
                        next_sample = time.monotonic() + min(args.sample_every, args.dwell / 2)
                    if now >= next_kill:
                        self._kill_engine(app)
                        next_kill += args.kill_engine_every
                    if self.gave_up:  # the supervisor stopped retrying: ask again, as a user would
                        self.gave_up = False
                        await pilot.press("r")
                    await asyncio.sleep(max(0.05, min(next_sample, next_flip, next_stop, next_kill, end) - time.monotonic()))
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            self.gpu.close()
            self.rows.close()

    async def _wait_for_first_sample(self, app: Any, pilot: Any) -> None:
        deadline = time.monotonic() + FIRST_SAMPLE_TIMEOUT_S
        while not any(s.history for s in app.session.backends.values()):
            if time.monotonic() > deadline or self.stop.is_set():
                raise SystemExit(f"soak: no sample within {FIRST_SAMPLE_TIMEOUT_S:.0f} s")
            await pilot.pause(0.2)

    async def _next_stop(self, app: Any, pilot: Any) -> None:
        """Press the keys that take the app to the next workload of the cycle, as a user would."""
        here, self.at = self.cycle[self.at], (self.at + 1) % len(self.cycle)
        there = self.cycle[self.at]
        keys = keys_between(here, there)
        await pilot.press(*keys)
        self.flips += len(keys)
        w = app.session.workload
        if (w.dtype, w.seq) != (there.dtype, there.seq):
            raise SystemExit(f"soak: keys {' '.join(keys)} led to {w.describe()}, not {there.label}")
        self.visits[there.label] = self.visits.get(there.label, 0) + 1

    def _kill_engine(self, app: Any) -> None:
        pid = app.engine.engine_pid
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)
            self.kills += 1
            print(f"  killed engine {pid} (SIGKILL #{self.kills})", flush=True)

    def _progress(self, row: dict[str, Any]) -> None:
        def fmt(value: Any, unit: str = "") -> str:
            if value is None:
                return "n/a"
            return (f"{value:.1f}" if isinstance(value, float) else str(value)) + unit

        print(f"  {row['elapsed_s']:8.1f} s  UI {fmt(row['ui_rss_mib'], ' MiB')} (anon {fmt(row['ui_rss_anon_mib'])}, "
              f"file {fmt(row['ui_rss_file_mib'])}, arenas {fmt(row['ui_pymalloc_arenas_mib'])}, malloc "
              f"{fmt(row['ui_malloc_used_mib'])}) {fmt(row['ui_fds'])} fds "
              f"{fmt(row['ui_threads'])} threads | engine {fmt(row['engine_rss_mib'], ' MiB')} "
              f"{fmt(row['engine_fds'])} fds, GPU {fmt(row['engine_gpu_mib'], ' MiB')} | "
              f"profiler {fmt(row['profiler_rss_mib'], ' MiB')} | "
              f"restarts {row['engine_restarts']}, recycles {row['engine_recycles']} | history {row['history_rows']}", flush=True)


# ------------------------------------------------------------------------------- results
def slope_per_hour(xs_s: list[float], ys: list[float]) -> float | None:
    if len(xs_s) < 2:
        return None
    xs = [x / 3600.0 for x in xs_s]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def summarize(samples: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    summary = {}
    for name in SERIES:
        points = [(s["elapsed_s"], s[name]) for s in samples if s.get(name) is not None]
        ys = [y for _, y in points]
        half = points[len(points) // 2:]
        summary[name] = {
            "first": ys[0] if ys else None,
            "last": ys[-1] if ys else None,
            "max": max(ys) if ys else None,
            "slope_per_hour": slope_per_hour([x for x, _ in points], ys),
            # start-up growth (caches, allocator pools) dominates the whole-run slope of a
            # short soak; a leak still shows in the second half
            "slope_per_hour_second_half": slope_per_hour([x for x, _ in half], [y for _, y in half]),
            "samples": len(ys),
        }
    return summary


def per_engine(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each engine process the soak saw (a restart or a replacement starts a new one): its RSS
    at its first sample and at most, and for how long it was sampled."""
    engines: dict[int, dict[str, Any]] = {}
    for s in samples:
        pid, rss = s.get("engine_pid"), s.get("engine_rss_mib")
        if pid is None or rss is None:
            continue
        e = engines.setdefault(pid, {"pid": pid, "first_s": s["elapsed_s"], "rss_first_mib": rss, "rss_max_mib": rss})
        e["last_s"] = s["elapsed_s"]
        e["rss_max_mib"] = max(e["rss_max_mib"], rss)
    return list(engines.values())


def print_table(summary: dict[str, dict[str, float | None]]) -> None:
    fmt = lambda v: "n/a" if v is None else f"{v:,.2f}"  # noqa: E731
    print(f"\n{'series':<20}{'first':>12}{'last':>12}{'max':>12}{'slope / hour':>15}{'2nd half':>15}")
    for name, s in summary.items():
        print(f"{name:<20}{fmt(s['first']):>12}{fmt(s['last']):>12}{fmt(s['max']):>12}"
              f"{fmt(s['slope_per_hour']):>15}{fmt(s['slope_per_hour_second_half']):>15}")


def leftover_engines(pids: set[int], timeout_s: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return sorted(p for p in pids if alive(p))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default cuda)")
    parser.add_argument("--minutes", type=float, default=8.0, help="how long to soak (default 8)")
    parser.add_argument("--flip-every", type=float, default=5.0,
                        help="seconds between key presses (default 5; 0: none, a user who only watches)")
    parser.add_argument("--keys-for", type=float, default=0.0,
                        help="press keys only in the first this many seconds, then watch (default 0: all along)")
    parser.add_argument("--sample-every", type=float, default=10.0, help="seconds between samples (default 10)")
    parser.add_argument("--kill-engine-every", type=float, default=0.0,
                        help="SIGKILL the engine every this many seconds to soak restarts (default 0: never)")
    parser.add_argument("--engine-memory-mib", type=float, default=None,
                        help=f"the app's engine memory allowance before it is replaced (default {ENGINE_MEMORY_MIB:g}, "
                        "with --cycle 0; 0: never)")
    parser.add_argument("--cycle", default=None, metavar="DTYPES",
                        help="visit each of these dtypes (e.g. fp16,bf16,fp32) with each --cycle-seqs length in a "
                        "loop, --dwell seconds each, instead of the restless key presses")
    parser.add_argument("--cycle-seqs", default=None, metavar="LENGTHS",
                        help="the sequence lengths of the cycle, a power of two apart (default: --seq)")
    parser.add_argument("--dwell", type=float, default=20.0, help="seconds at each workload of the cycle (default 20)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--dtype", default="fp16")
    parser.add_argument("--history-rows", type=int, default=None, metavar="N",
                        help="each backend's history bound for this run (N/2 recent, N/2 tail; default the app's, "
                        f"{RECENT} + {TAIL_MAX}): a small one is reached in minutes, so the hour shows what else grows")
    parser.add_argument("--machine", default=None,
                        help="a few words on the machine, written into the JSON (e.g. '2-core shared VM, loaded')")
    parser.add_argument("--out", default=None, help="results path without extension "
                        "(default benchmarks/results/soak-<device>-<date>)")
    args = parser.parse_args(argv)
    if args.engine_memory_mib is None:
        args.engine_memory_mib = 0.0 if args.cycle else ENGINE_MEMORY_MIB
    if args.history_rows is not None and args.history_rows < 2:
        parser.error("--history-rows must be 2 or more")
    if args.cycle_seqs is None:
        args.cycle_seqs = str(args.seq)
    if args.cycle:
        try:
            parse_cycle(args.cycle, args.cycle_seqs)
        except ValueError as exc:
            parser.error(str(exc))
    if args.dwell <= 0 or not args.engine_memory_mib >= 0:
        parser.error("--dwell must be positive and --engine-memory-mib 0 or more")
    if min(args.minutes, args.sample_every) <= 0 or min(args.flip_every, args.keys_for, args.kill_engine_every) < 0:
        parser.error("--minutes and --sample-every must be positive; --flip-every, --keys-for and "
                     "--kill-engine-every >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.history_rows:  # every backend's ring is made with these defaults (BackendState's default_factory)
        HistoryRing.__init__.__defaults__ = (args.history_rows // 2, args.history_rows // 2, TAIL_EVERY)
    soak = Soak(args)
    started = dt.datetime.now()
    keys = f"a key every {args.flip_every:g} s" if args.flip_every else "no key presses"
    keys += f" for the first {args.keys_for:g} s" if args.flip_every and args.keys_for else ""
    if soak.cycle:
        keys = (f"a cycle of {len(soak.cycle)} workloads ({', '.join(s.label for s in soak.cycle)}), "
                f"{args.dwell:g} s each, engine allowance {args.engine_memory_mib:g} MiB")
    print(f"soak: {args.minutes:g} min on {args.device}, {keys}, "
          f"a sample every {args.sample_every:g} s"
          + (f", engine killed every {args.kill_engine_every:g} s" if args.kill_engine_every else ""), flush=True)
    load_before = os.getloadavg()
    asyncio.run(soak.run())
    load_after = os.getloadavg()
    left = leftover_engines(soak.engine_pids)
    samples = soak.rows.rows()
    soak.rows.path.unlink()
    summary = summarize(samples)
    print_table(summary)
    engines = per_engine(samples)
    if len(engines) > 1:
        print("\nengine processes (RSS MiB): " + "; ".join(
            f"{e['first_s']:.0f}-{e['last_s']:.0f} s: {e['rss_first_mib']:,.0f} -> max {e['rss_max_mib']:,.0f}" for e in engines))
    visits = per_visit(samples) if soak.cycle else {}
    if visits:
        print("\nengine RSS (MiB) at the end of each visit (* another engine process than at the start):")
        print(format_table(visits))
        if soak.recycles or len(soak.engine_pids) > 1:
            print(f"the engine was replaced {soak.recycles} times and {len(soak.engine_pids)} engine processes ran: "
                  "visits after a new engine do not compare with those before it")
    print(f"\nkey presses {soak.flips}, engine kills {soak.kills}, engine recycles {soak.recycles}, "
          f"engine processes seen {len(soak.engine_pids)}, left running after exit {len(left)}")

    base = Path(args.out) if args.out else (
        REPO / "benchmarks" / "results" / f"soak-{args.device.replace(':', '')}-{started.date()}")
    base.parent.mkdir(parents=True, exist_ok=True)
    result = {
        **run_header(started, argv, args.device),
        "settings": {k: v for k, v in vars(args).items() if k not in ("out", "machine")},
        "machine": {"note": args.machine, "cpus": os.cpu_count(),
                    "load_average_1_5_15_min": {"before": load_before, "after": load_after}},
        "gpu_memory_source": soak.gpu.why or "NVML compute processes",
        "key_presses": soak.flips,
        "engine_kills": soak.kills,
        "engine_recycles": soak.recycles,
        "engines": engines,
        "engine_pids": sorted(soak.engine_pids),
        "engines_left_after_exit": left,
        "summary": summary,
        **({"visits": {stop: {"visits": v, "last_minus_first_mib": later_minus_first(v)} for stop, v in visits.items()}}
           if soak.cycle else {}),
        "samples": samples,
    }
    base.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    with base.with_suffix(".csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(samples[0]) if samples else ["elapsed_s", *SERIES])
        writer.writeheader()
        writer.writerows(samples)
    print(f"wrote {base.with_suffix('.json')} and {base.with_suffix('.csv')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
