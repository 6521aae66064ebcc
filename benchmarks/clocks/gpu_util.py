"""NVML utilization beside the engine's own duty cycle, with the live monitor's settings.

Starts the real engine headless, configured as the live screen configures it (each backend
sampled every SAMPLE_INTERVAL_S, kernel bursts backing off), reads NVML on the engine's GPU
every --every seconds, and prints one line per reading: NVML's utilization (the share of its
last sample window in which any kernel ran) and the engine's share (the device time its
timed calls took over wall time, last 5 s, from ``Sample.busy_s``). A summary says how often
NVML read 0 % and the medians.

    python3 benchmarks/clocks/gpu_util.py --batch 2 --heads 8 --seq 8192 --head-dim 64 --causal --seconds 40

Prints a table and writes JSON (--json).
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from recorded import command_line  # noqa: E402

from sdpa_tui.core.backends import ALL_BACKENDS, parse_backend_list  # noqa: E402
from sdpa_tui.core.lab.duty import BusyWindow  # noqa: E402
from sdpa_tui.core.lab.lab_controller import PROFILE_EVERY_MAX_S, PROFILE_EVERY_S, SAMPLE_INTERVAL_S  # noqa: E402
from sdpa_tui.core.protocol.engine_commands import Configure  # noqa: E402
from sdpa_tui.core.protocol.records import EngineError, Ready, Sample  # noqa: E402
from sdpa_tui.core.workload import Workload  # noqa: E402
from sdpa_tui.engine.host.client import EngineClient  # noqa: E402
from sdpa_tui.telemetry.device_choice import check_device, find_gpus  # noqa: E402
from sdpa_tui.telemetry.nvml import NvmlReader  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--seq", type=int, default=8192)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--dtype", default="fp16")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--backends", default=",".join(b.short for b in ALL_BACKENDS))
    parser.add_argument("--seconds", type=float, default=40.0, help="how long to read once the engine is ready")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between NVML readings (the UI's poll)")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()

    device = check_device(args.device)
    workload = Workload(batch=args.batch, heads=args.heads, kv_heads=args.heads, seq=args.seq, kv_seq=args.seq,
                        head_dim=args.head_dim, dtype=args.dtype, mask="causal" if args.causal else "none")
    gpus = find_gpus() if device != "cpu" else None
    nvml_index = gpus.nvml_indices[int(device.split(":")[1])] if gpus else None
    reader = NvmlReader(nvml_index) if nvml_index is not None and nvml_index >= 0 else None

    client = EngineClient(device)
    client.start()
    busy = BusyWindow()
    samples: dict[str, int] = {}
    rows = []
    try:
        client.send(Configure(1, workload, parse_backend_list(args.backends), profile_every_s=PROFILE_EVERY_S,
                              profile_every_max_s=PROFILE_EVERY_MAX_S, sample_interval_s=SAMPLE_INTERVAL_S))
        ready_at = None
        next_read = 0.0
        print(f"{'t (s)':>6} {'NVML util %':>11} {'engine %':>9} {'samples':>8}", flush=True)
        while True:
            for record in client.receive(timeout=0.05):
                if isinstance(record, Ready):
                    print(f"engine ready on {record.environment.device_name}", file=sys.stderr)
                elif isinstance(record, Sample) and record.config_id == 1:
                    ready_at = ready_at or time.monotonic()
                    samples[record.backend.value] = samples.get(record.backend.value, 0) + 1
                    if record.busy_s is not None:
                        busy.add(record.time, record.busy_s)
                elif isinstance(record, EngineError) and record.fatal:
                    print(f"engine failed: {record.message}", file=sys.stderr)
                    return 1
            if not client.alive:
                print(f"engine died (exit {client.exit_code})", file=sys.stderr)
                return 1
            now = time.monotonic()
            if ready_at is None or now < next_read:
                continue
            if now - ready_at > args.seconds:
                break
            next_read = now + args.every
            snap = reader.snapshot({client.pid} if client.pid else set()) if reader else None
            util = snap.utilization_gpu_pct if snap else None
            share = busy.share()
            row = {"t_s": round(now - ready_at, 2), "nvml_util_pct": util,
                   "engine_pct": None if share is None else round(100 * share, 1),
                   "samples": sum(samples.values())}
            rows.append(row)
            print(f"{row['t_s']:>6.1f} {'n/a' if util is None else util:>11} "
                  f"{'n/a' if share is None else f'{100 * share:.1f}':>9} {row['samples']:>8}", flush=True)
    finally:
        client.stop()
        if reader:
            reader.close()
    utils = [r["nvml_util_pct"] for r in rows if r["nvml_util_pct"] is not None]
    shares = [r["engine_pct"] for r in rows if r["engine_pct"] is not None]
    summary = {
        "readings": len(rows),
        "nvml_util_median_pct": statistics.median(utils) if utils else None,
        "nvml_zero_readings": sum(1 for u in utils if u == 0),
        "engine_median_pct": statistics.median(shares) if shares else None,
        "samples_per_backend": samples,
    }
    print(json.dumps(summary))
    if args.json:
        doc = {"date": dt.date.today().isoformat(), "machine": platform.machine(),
               "command": command_line(), "device": device, "workload": workload.to_dict(),
               "sample_interval_s": SAMPLE_INTERVAL_S, "summary": summary, "readings": rows}
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
