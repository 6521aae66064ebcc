"""The UI process's CPU use under a GPU's record stream, measured on any machine.

The live monitor's UI process draws what the engine sends; how much it sends depends on the
GPU: on the H100 every backend sends a sample every 0.25 s (the interval the app asks for),
on a CPU about one a second, so a CPU run of ``ui_live.py`` cannot show the UI's cost on a
GPU. This benchmark replays a recorded H100 report into the real app in a real terminal
(tmux): its environment, dispatch, verdicts and kernels first, then a sample of every backend
each ``--interval`` seconds (its medians, each with a 3 % wobble), and a kernel capture of
each backend at the app's burst intervals (5 s, doubling to 60 s). The records are posted by
a thread of the UI process, as the real supervisor thread posts the engine's; building them
costs about what unpickling them does there. NVML is not read (the GPU panel says so): the
UI's NVML polling is not in the figure.

    python3 benchmarks/monitor/ui_replay.py --seconds 30
    python3 benchmarks/monitor/ui_replay.py --seconds 30 --pythonpath OTHER_CHECKOUT   # before a change

Prints a table and writes JSON under benchmarks/results/.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
import ui_live  # noqa: E402
from recorded import load_average, run_header, write_result  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
REPORT = REPO / "tests" / "fixtures" / "reports" / "h100-torch2.11" / "report-small.json"
"""The H100 report replayed: the default workload [2, 8, 512, 64] fp16, every backend eligible."""
BURST_EVERY_S = (5.0, 60.0)  # the app's PROFILE_EVERY_S and PROFILE_EVERY_MAX_S


class ReplayEngine:
    """The engine interface the app uses, answering every Configure with the report's records."""

    def __init__(self, report: dict, interval_s: float) -> None:
        from sdpa_tui.core.backends import Backend
        from sdpa_tui.core.protocol.records import BackendStatus, Dispatch, Environment, KernelCapture, KernelInfo

        self.app = None
        self.interval_s = interval_s
        self.alive = True
        self.engine_pid = os.getpid()
        self.engine_pids = frozenset({self.engine_pid})
        self._config = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._report = report
        self._environment = Environment.from_dict(report["environment"])
        self._medians = {Backend(b["backend"]): (b["gpu_us"], b["eager_us"])
                         for b in report["backends"] if b["status"] == "ok"}
        self._captures = {
            Backend(b["backend"]): (tuple(KernelInfo.from_dict(k) for k in b["kernels"]), b["kernel_us"],
                                    None if b["peak_mib"] is None else int(b["peak_mib"] * 2**20))
            for b in report["backends"] if b["kernels"]
        }
        choice = report["dispatch"]["choice"]
        self._dispatch = (Backend(choice) if choice else None, tuple(report["dispatch"]["priority_order"]),
                          report["dispatch"]["reason"])
        self._types = (BackendStatus, Dispatch, KernelCapture)

    # -- the interface ---------------------------------------------------------------------
    def start(self) -> None:
        from sdpa_tui.core.protocol.records import Ready

        self._post([Ready(self._environment)])
        threading.Thread(target=self._stream, name="replay", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def configure(self, config) -> None:
        with self._lock:
            self._config = config
            self._bursts = {b: (time.monotonic(), 0.0) for b in self._medians}
        status, dispatch, _ = self._types
        choice, order, reason = self._dispatch
        records = [dispatch(config.config_id, choice if choice in config.enabled else None, order, reason)]
        records += [status(config.config_id, b, "ok" if b in config.enabled else "disabled") for b in self._medians]
        self._post(records)

    def set_paused(self, paused: bool) -> None:
        pass

    def retry(self) -> None:
        pass

    def switch_device(self, device: str) -> None:
        pass

    def kill_engine(self) -> None:
        pass

    def send(self, record) -> bool:
        return True

    # -- the stream ------------------------------------------------------------------------
    def _post(self, records: list) -> None:
        from sdpa_tui.ui.messages import EngineRecords

        if self.app is not None:
            self.app.post_message(EngineRecords(records))

    def _stream(self) -> None:
        from sdpa_tui.core.protocol.records import Sample

        _, _, capture = self._types
        wobble = random.Random(0)
        while not self._stop.wait(self.interval_s):
            with self._lock:
                config = self._config
            if config is None:
                continue
            now, records = time.monotonic(), []
            for backend, (gpu_us, eager_us) in self._medians.items():
                if backend not in config.enabled:
                    continue
                gpu = gpu_us * wobble.gauss(1.0, 0.03)
                records.append(Sample(config.config_id, backend, gpu, eager_us * wobble.gauss(1.0, 0.03),
                                      "graph", 64, time.time(), gpu * 128 / 1e6))
                due, every = self._bursts[backend]
                if now >= due and backend in self._captures:
                    kernels, kernel_us, peak = self._captures[backend]
                    records.append(capture(config.config_id, backend, kernels, (kernel_us,), peak, time.time()))
                    every = BURST_EVERY_S[0] if every == 0.0 else min(every * 2, BURST_EVERY_S[1])
                    self._bursts[backend] = (now + every, every)
            if records:
                self._post(records)


def run_app(interval_s: float) -> int:
    """Inside the terminal: the real app with the replaying engine."""
    from sdpa_tui.core.backends import ALL_BACKENDS
    from sdpa_tui.core.lab.session import Session
    from sdpa_tui.core.workload import Workload
    from sdpa_tui.ui.app import SdpaApp

    report = json.loads(REPORT.read_text(encoding="utf-8"))
    engine = ReplayEngine(report, interval_s)
    app = SdpaApp(Session(Workload.from_dict(report["workload"]), ALL_BACKENDS), engine, device="cuda:0")
    engine.app = app
    app.run()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="how long to measure CPU use while live")
    parser.add_argument("--interval", type=float, default=0.25,
                        help="seconds between two samples of a backend (default 0.25: the H100's)")
    parser.add_argument("--pythonpath", default=str(REPO), help="where sdpa_tui is imported from (default: this checkout)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--app", action="store_true", help=argparse.SUPPRESS)  # inside the terminal
    args = parser.parse_args()
    if args.app:
        return run_app(args.interval)
    started = time.monotonic()
    env = f"PYTHONPATH={shlex.quote(args.pythonpath)}"
    command = f"exec env {env} {shlex.quote(sys.executable)} {shlex.quote(__file__)} --app --interval {args.interval}"
    ui_live.tmux("new-session", "-d", "-s", ui_live.SESSION, "-x", "120", "-y", "40", command)
    try:
        pid = int(ui_live.tmux("list-panes", "-t", ui_live.SESSION, "-F", "#{pane_pid}").split()[0])
        full = ui_live.wait_for(ui_live.full_panels, started, 60)
        time.sleep(2.0)
        cpu0, t0 = ui_live.cpu_seconds(pid), time.monotonic()
        time.sleep(args.seconds)
        cpu1, t1 = ui_live.cpu_seconds(pid), time.monotonic()
        final_screen = ui_live.screen()
        ui_live.tmux("send-keys", "-t", ui_live.SESSION, "q")
        time.sleep(1.0)
    finally:  # q ended the session; the server goes with its last session, or now
        subprocess.run(["tmux", "-L", ui_live.SOCKET, "kill-server"], capture_output=True)
    percent = 100.0 * (cpu1 - cpu0) / (t1 - t0)
    result = {
        **run_header(dt.datetime.now(), None, "replay of an H100 report"),
        "report": str(REPORT.relative_to(REPO)),
        "interval_s": args.interval,
        "full_panels_s": full,
        "load_average": load_average(),
        "ui_cpu_percent_of_one_core": percent,
        "measured_s": t1 - t0,
        "screen": final_screen,
    }
    print(f"{'sample interval':<18}{'full panels':>14}{'UI CPU %':>10}")
    print(f"{args.interval:<18g}{'timeout' if full is None else f'{full:.2f} s':>14}{percent:>9.1f}%")
    print(f"(one backend's samples every {args.interval:g} s, four backends; load average {result['load_average']})")
    write_result(result, args.json, f"ui-replay-{dt.date.today()}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
