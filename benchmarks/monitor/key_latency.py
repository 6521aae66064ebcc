"""From a key press to the first fresh number on screen, per key, and the UI process's CPU use.

Runs the real app (``make_app``: a real engine process) under Textual's Pilot, waits until every
running backend has numbers, then presses keys as a user would (``f`` Flash off and on again,
``+`` and ``-`` the sequence length). For each press it records when the first number of the
new configuration was drawn (the app's redraw that first showed one) and when every running
backend had one in the app's session (drawn at the next redraw, at most 0.5 s later). Issue 12
asks for under 1 s at the blog shape on the H100, with the UI process at most 10 % of a core.

    python3 benchmarks/monitor/key_latency.py --device cuda
    python3 benchmarks/monitor/key_latency.py --device cpu --rounds 2

Prints a table and writes benchmarks/results/key-latency-<device>-<date>.json (or ``--json``).
``run_test`` draws to no terminal: the CPU figure is the UI's own work without terminal writes
(benchmarks/monitor/ui_live.py measures it in a real terminal).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from live_app import (  # noqa: E402
    SIZE,
    ScreenClock,
    add_workload_options,
    cpu_percent,
    live_result_header,
    make_live_app,
)
from recorded import load_average, write_result  # noqa: E402

KEYS = ("f", "f", "plus", "minus")
"""One round: Flash off, on again; the sequence length doubled, halved again."""
SETTLE_S = 1.0
"""Pause between presses, after every backend showed a fresh number."""
KEY_TIMEOUT_S = 60.0


async def wait_all_running_shown(pilot: Any, clock: ScreenClock, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not clock.all_shown():
        if time.monotonic() > deadline:
            return False
        await pilot.pause(0.05)
    return True


def started_up(app: Any) -> bool:
    """Every running backend has its kernels, and the matmul peak is in."""
    session = app.session
    running = [s for s in session.backends.values() if s.enabled and s.status == "ok"]
    return session.workload.dtype in session.peaks and all(s.kernels for s in running)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    app = make_live_app(args)
    presses: list[dict[str, Any]] = []
    async with app.run_test(size=SIZE) as pilot:
        clock = ScreenClock(app)
        if not await wait_all_running_shown(pilot, clock, 180.0):
            raise SystemExit("key_latency: the backends had no numbers within 180 s")
        deadline = time.monotonic() + 120.0
        while not started_up(app) and time.monotonic() < deadline:  # start-up work over: steady state
            await pilot.pause(0.05)
        await pilot.pause(SETTLE_S)
        cpu0, t0 = time.process_time(), time.monotonic()
        for round_ in range(args.rounds):
            for key in KEYS:
                before = app.session.config_id
                pressed = time.monotonic()
                await pilot.press(key)
                cid = app.session.config_id
                all_ok = await wait_all_running_shown(pilot, clock, KEY_TIMEOUT_S)
                all_at = time.monotonic()
                await pilot.pause(SETTLE_S)  # the redraw that shows them may still be to come
                first = clock.first_with(cid, pressed)
                presses.append({
                    "round": round_, "key": key, "config_changed": cid != before,
                    "workload": app.session.workload.describe(),
                    "first_number_s": None if first is None else round(first - pressed, 3),
                    "all_running_s": round(all_at - pressed, 3) if all_ok else None,
                })
        ui_cpu = cpu_percent(time.process_time() - cpu0, time.monotonic() - t0)
    return {"presses": presses, "ui_cpu_percent_of_one_core": round(ui_cpu, 1)}


def summary(presses: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    out = {}
    for key in KEYS:
        firsts = [p["first_number_s"] for p in presses if p["key"] == key and p["first_number_s"] is not None]
        alls = [p["all_running_s"] for p in presses if p["key"] == key and p["all_running_s"] is not None]
        out[key] = {"first_number_median_s": statistics.median(firsts) if firsts else None,
                    "first_number_max_s": max(firsts) if firsts else None,
                    "all_running_median_s": statistics.median(alls) if alls else None,
                    "presses": sum(p["key"] == key for p in presses)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_options(parser)  # the blog shape: [2, 8, 512, 64] fp16
    parser.add_argument("--rounds", type=int, default=3, help="rounds of f f + - (default 3)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    started = dt.datetime.now()
    load_before = load_average()
    measured = asyncio.run(run(args))
    table = summary(measured["presses"])
    fmt = lambda v: "–" if v is None else f"{v * 1000:,.0f} ms"  # noqa: E731
    print(f"{'key':<8}{'first number (median)':>24}{'(max)':>10}{'all fresh in session':>23}{'presses':>9}")
    for key, row in table.items():
        print(f"{key:<8}{fmt(row['first_number_median_s']):>24}{fmt(row['first_number_max_s']):>10}"
              f"{fmt(row['all_running_median_s']):>23}{row['presses']:>9}")
    print(f"UI process: {measured['ui_cpu_percent_of_one_core']:.1f} % of one core over the presses; "
          f"load average before {load_before}, after {load_average()}")

    result = {
        **live_result_header(started, argv, args, load_before),
        "summary": table,
        **measured,
    }
    write_result(result, args.json, f"key-latency-{args.device.replace(':', '')}-{started.date()}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
