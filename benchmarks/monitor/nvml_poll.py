"""How long one NVML reading of every GPU of the host takes (what the UI's 1 s timer triggers).

    python3 benchmarks/monitor/nvml_poll.py --polls 50 --json benchmarks/results/nvml-poll-h100-DATE.json

Reads all GPUs with :class:`HostGpuReader` ``--polls`` times and prints, per poll and per
GPU, the median and 90th percentile wall time, plus the slowest single GPU. Where NVML cannot
be opened (no driver, no pynvml: a CPU machine) it says why, writes that into the JSON and
exits 0: there is nothing to time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py

from recorded import command_line  # noqa: E402

from sdpa_tui.telemetry.host_gpus import HostGpuReader  # noqa: E402


def percentile(values: list[float], pct: float) -> float:
    data = sorted(values)
    return data[min(len(data) - 1, round(pct / 100 * (len(data) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=50, help="readings of all GPUs to time (default 50)")
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between readings (default 0.05)")
    parser.add_argument("--json", metavar="PATH", help="write the results as JSON")
    args = parser.parse_args()
    if args.polls < 1 or args.interval < 0:
        parser.exit(2, "nvml_poll.py: error: --polls must be 1 or more and --interval 0 or more\n")

    result: dict = {
        "benchmark": "nvml_poll",
        "date": dt.date.today().isoformat(),
        "host": platform.node(),
        "python": platform.python_version(),
        "command_line": command_line(),
    }
    with HostGpuReader() as reader:
        t0 = time.perf_counter()
        first = reader.snapshot()  # opens NVML and gets the handles: timed apart
        result["first_reading_ms"] = (time.perf_counter() - t0) * 1e3
        if first.reason is not None:
            result.update(gpus=0, reason=first.reason)
            print(f"no NVML reading on this machine: {first.reason}; nothing to time")
            _write(args.json, result)
            return 0
        polls, per_gpu = [], []
        for _ in range(args.polls):
            time.sleep(args.interval)
            host = reader.snapshot()
            polls.append(host.read_s * 1e3)
            per_gpu.append(host.read_s * 1e3 / max(1, host.count))
        names = sorted({g.name or "?" for g in host.gpus})
        errors = sorted({f"{k}: {v}" for g in host.gpus for k, v in g.errors.items()})

    result.update(
        gpus=host.count, gpu_names=names, driver=host.gpus[0].driver_version, polls=args.polls,
        poll_ms={"median": statistics.median(polls), "p90": percentile(polls, 90), "max": max(polls)},
        per_gpu_ms={"median": statistics.median(per_gpu), "p90": percentile(per_gpu, 90)},
        fields_na=errors,
    )
    rows = [("GPUs", f"{host.count} ({', '.join(names)})"),
            ("first reading (NVML init, handles)", f"{result['first_reading_ms']:.1f} ms"),
            ("one reading of all GPUs: median", f"{result['poll_ms']['median']:.2f} ms"),
            ("                         p90", f"{result['poll_ms']['p90']:.2f} ms"),
            ("                         max", f"{result['poll_ms']['max']:.2f} ms"),
            ("per GPU: median", f"{result['per_gpu_ms']['median']:.2f} ms"),
            ("fields n/a", "; ".join(errors) or "none")]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    _write(args.json, result)
    return 0


def _write(path: str | None, result: dict) -> None:
    if path:
        Path(path).write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
