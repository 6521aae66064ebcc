"""What the live-app benchmarks share: workload options, the real app under Textual's Pilot,
and when a number is on screen.

The app is the one ``sdpa-tui`` runs (``make_app``: a real engine process); ``run_test`` draws
to no terminal, so this process's CPU time is the UI's work without the terminal writes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
# This checkout, unless PYTHONPATH names one (to measure another checkout, e.g. before a change)
sys.path.insert(len(sys.path) if os.environ.get("PYTHONPATH") else 0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py

from recorded import load_average, run_header  # noqa: E402

from sdpa_tui.core.backends import ALL_BACKENDS  # noqa: E402
from sdpa_tui.core.workload import Workload  # noqa: E402

SIZE = (120, 40)


def add_workload_options(parser: argparse.ArgumentParser, seq: int = 512, head_dim: int = 64,
                         batch: int = 2, heads: int = 8) -> None:
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default cuda)")
    parser.add_argument("--batch", type=int, default=batch)
    parser.add_argument("--heads", type=int, default=heads)
    parser.add_argument("--seq", type=int, default=seq)
    parser.add_argument("--head-dim", type=int, default=head_dim)
    parser.add_argument("--dtype", default="fp16")


def workload_of(args: argparse.Namespace) -> Workload:
    return Workload(batch=args.batch, heads=args.heads, kv_heads=args.heads, seq=args.seq, kv_seq=args.seq,
                    head_dim=args.head_dim, dtype=args.dtype)


def make_live_app(args: argparse.Namespace) -> Any:
    import tempfile

    from sdpa_tui.commands.monitor import make_app

    return make_app(workload_of(args), ALL_BACKENDS, args.device,
                    os.path.join(tempfile.gettempdir(), "sdpa-tui-bench-exports"))


class ScreenClock:
    """Records each redraw of the panels and the newest configuration with a number on screen
    then, so a benchmark can tell when the first number of a new configuration was drawn."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.redraws: list[tuple[float, int]] = []  # (monotonic time, newest config id shown)
        redraw = app._redraw

        def timed() -> None:
            redraw()
            self.redraws.append((time.monotonic(), self.newest_config_shown()))

        app._redraw = timed

    def newest_config_shown(self) -> int:
        states = self.app.session.backends.values()
        return max((s.history[-1].config_id for s in states if s.enabled and s.history), default=0)

    def first_with(self, config_id: int, since: float = 0.0) -> float | None:
        """When a number of ``config_id`` (or a later one) was first drawn, after ``since``."""
        return next((t for t, shown in self.redraws if t >= since and shown >= config_id), None)

    def all_shown(self) -> bool:
        """Every running backend shows a number of the current configuration."""
        session = self.app.session
        running = [s for s in session.backends.values() if s.enabled and s.status == "ok"]
        return bool(running) and all(s.history and s.history[-1].config_id == session.config_id for s in running)


def cpu_percent(cpu_s: float, wall_s: float) -> float:
    return 100.0 * cpu_s / wall_s if wall_s > 0 else 0.0


def live_result_header(started: dt.datetime, argv: list[str] | None, args: argparse.Namespace,
                       load_before: list[float]) -> dict:
    """The fields a live-app benchmark's result starts with: recorded.run_header, the workload,
    and the load average before the run and now."""
    return {
        **run_header(started, argv, args.device),
        "workload": workload_of(args).describe(),
        "load_average_before": load_before,
        "load_average_after": load_average(),
    }
