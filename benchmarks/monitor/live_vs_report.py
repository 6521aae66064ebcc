"""Do the live monitor's medians agree with ``sdpa-tui report``'s at the same shape?

Measures headless (what ``sdpa-tui report`` runs), then the live app (``make_app`` under
Textual's Pilot, a real engine process) for ``--seconds``, then headless again, and prints
each backend's medians side by side: the live median (what the panel shows: the last 50
samples) against the mean of the two headless medians, and how far apart they are.

    python3 benchmarks/monitor/live_vs_report.py --device cpu --batch 1 --heads 2 --seq 128 --head-dim 32
    CUDA_VISIBLE_DEVICES= taskset -c 0,1 python3 benchmarks/monitor/live_vs_report.py --device cpu ...  # a 2-core box
    python3 benchmarks/monitor/live_vs_report.py --device cuda

Writes benchmarks/results/live-vs-report-<device>-<date>.json (or ``--json``).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from live_app import (  # noqa: E402
    SIZE,
    add_workload_options,
    cpu_percent,
    live_result_header,
    make_live_app,
    workload_of,
)
from recorded import load_average, write_result  # noqa: E402

from sdpa_tui.core.backends import ALL_BACKENDS  # noqa: E402
from sdpa_tui.engine.host.headless import measure  # noqa: E402
from sdpa_tui.telemetry.host_cpu import cpu_pressure  # noqa: E402

CLOCKS = ("gpu_us", "eager_us")
TOLERANCE = 0.10
"""Issue 13: live medians within 10 % of the report's."""


def medians(session: Any) -> dict[str, dict[str, float | None]]:
    out = {}
    for row in session.rows():
        if row.status != "ok":
            continue
        out[row.backend.value] = {c: (getattr(row, c).median if getattr(row, c) else None) for c in CLOCKS}
        out[row.backend.value]["samples"] = row.eager_us.count if row.eager_us else 0
    return out


def headless(args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.monotonic()
    session = measure(workload_of(args), ALL_BACKENDS, args.device, duration_s=args.report_seconds)
    return {"medians": medians(session), "wall_s": round(time.monotonic() - t0, 1),
            "cpu_pressure_after_percent": cpu_pressure()}


async def live(args: argparse.Namespace) -> dict[str, Any]:
    app = make_live_app(args)
    async with app.run_test(size=SIZE) as pilot:
        deadline = time.monotonic() + 120
        while not any(s.history for s in app.session.backends.values()):
            if time.monotonic() > deadline:
                raise SystemExit("live_vs_report: no live sample within 120 s")
            await pilot.pause(0.2)
        cpu0, t0 = time.process_time(), time.monotonic()
        await pilot.pause(args.seconds)
        ui_cpu = cpu_percent(time.process_time() - cpu0, time.monotonic() - t0)
        header = app.main_screen.query_one("#header").render()
        return {"medians": medians(app.session), "ui_cpu_percent_of_one_core": round(ui_cpu, 1),
                "cpu_pressure_after_percent": cpu_pressure(), "header": str(header)}


def compare(live_m: dict, reports: list[dict]) -> list[dict[str, Any]]:
    rows = []
    for backend, values in live_m.items():
        for clock in CLOCKS:
            ours = values.get(clock)
            theirs = [r[backend][clock] for r in reports if backend in r and r[backend].get(clock)]
            if ours is None or not theirs:
                continue
            ref = sum(theirs) / len(theirs)
            rows.append({"backend": backend, "clock": clock, "live_us": round(ours, 2),
                         "report_us": [round(t, 2) for t in theirs], "ratio": round(ours / ref, 3),
                         "within_10pct": abs(ours / ref - 1) <= TOLERANCE})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_workload_options(parser, seq=128, head_dim=32, batch=1, heads=2)
    parser.set_defaults(device="cpu")
    parser.add_argument("--seconds", type=float, default=15.0, help="live measuring time after the first sample")
    parser.add_argument("--report-seconds", type=float, default=3.0, help="headless --duration (report's default 3)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    started = dt.datetime.now()
    load_before = load_average()
    first = headless(args)
    live_result = asyncio.run(live(args))
    second = headless(args)
    rows = compare(live_result["medians"], [first["medians"], second["medians"]])

    print(f"{'backend':<22}{'clock':<10}{'live':>12}{'report 1':>12}{'report 2':>12}{'live/report':>13}")
    for r in rows:
        reports = (r["report_us"] + [None])[:2]
        fmt = lambda v: "–" if v is None else f"{v:,.1f}"  # noqa: E731
        print(f"{r['backend']:<22}{r['clock']:<10}{fmt(r['live_us']):>12}{fmt(reports[0]):>12}{fmt(reports[1]):>12}"
              f"{r['ratio']:>12.2f}{'' if r['within_10pct'] else ' !'}")
    print(f"UI process while live: {live_result['ui_cpu_percent_of_one_core']:.1f} % of one core; "
          f"load average before {load_before}, after {load_average()}; CPU pressure (PSI avg10, % of time a task "
          f"waited for a core) after report 1 / live / report 2: {first['cpu_pressure_after_percent']} / "
          f"{live_result['cpu_pressure_after_percent']} / {second['cpu_pressure_after_percent']}")

    result = {
        **live_result_header(started, argv, args, load_before),
        "report_first": first,
        "live": live_result,
        "report_second": second,
        "comparison": rows,
        "all_within_10pct": all(r["within_10pct"] for r in rows),
    }
    write_result(result, args.json, f"live-vs-report-{args.device.replace(':', '')}-{started.date()}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
