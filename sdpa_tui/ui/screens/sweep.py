"""The sweep view: GPU/call and memory against sequence length, with crossovers named.

It runs the app's ``measure_series`` (``engine/host/headless.py``'s: its own engine process) on a worker thread
while the live engine is paused, so the two never share the GPU; Escape stops it and resumes live measuring.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Static

from ...core.backends import Backend
from ...core.protocol.headless_progress import EngineFailed, SeriesProgress
from ...core.sweep.series_measurer import SeriesMeasurer
from ...core.sweep.sweep_findings import crossovers
from ...core.sweep.sweep_lengths import TIMEOUT_PER_LENGTH_S, sweep_workloads
from ...core.sweep.sweep_points import Sweep
from ...core.workload import Workload
from ...exports.sweep.sweep_terminal import progress_line, render

GPU_SEQS = tuple(2**i for i in range(8, 16))  # 256 … 32768
CPU_SEQS = tuple(2**i for i in range(6, 12))  # 64 … 2048: the CPU is slow at long lengths


class SweepScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,v", "close", "Close")]

    @dataclass
    class Update(Message):
        """What the sweep has measured so far, from its worker thread."""

        text: str
        done: bool = False

    def __init__(self, workload: Workload, enabled: tuple[Backend, ...], device: str, cpu: bool,
                 measure: SeriesMeasurer) -> None:
        super().__init__()
        self.measure = measure
        seqs = CPU_SEQS if cpu else GPU_SEQS
        self.sweep = Sweep(sweep_workloads(workload, seqs), enabled)
        self.device = device
        self.environment = None
        self.cancelled = threading.Event()

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="sweep-body"):
            yield Static("starting a sweep engine (importing torch)…", id="sweep-status")
            yield Static(id="sweep-result")

    def on_mount(self) -> None:
        self.query_one("#sweep-body").border_title = "Sweep: time per call against sequence length (Escape closes)"
        self.run_sweep()

    @work(thread=True, exclusive=True, group="sweep", exit_on_error=False)
    def run_sweep(self) -> None:
        def progress(p: SeriesProgress) -> None:
            if self.cancelled.is_set():
                raise EngineFailed("cancelled")
            where = f"seq {p.workload.seq} ({p.index + 1}/{p.count}) · " if p.ready else ""
            self.post_message(self.Update(f"{where}{p.text} · {p.elapsed_s:.0f} s"))

        series = self.measure(self.sweep.workloads, self.sweep.active(), self.device, duration_s=0.5,
                              timeout_s=TIMEOUT_PER_LENGTH_S, on_progress=progress,
                              next_enabled=lambda session: self.sweep.active())
        lines: list[str] = []
        try:
            for session in series:
                self.environment = session.environment
                lines.append(progress_line(self.sweep.add(session.rows())))
                if session.incomplete:
                    lines.append(f"seq {session.workload.seq}: {session.incomplete}")
                self.post_message(self.Update("\n".join(lines)))
        except EngineFailed as exc:
            self.sweep.abort("stopped" if self.cancelled.is_set() else f"failed: {exc}")
        finally:
            series.close()
        self.post_message(self.Update("\n".join(lines), done=True))

    def on_sweep_screen_update(self, message: Update) -> None:
        self.query_one("#sweep-status", Static).update(message.text)
        if self.sweep.measured:
            points = self.sweep.points()
            findings = crossovers(points) if message.done else []
            width = max(60, self.size.width - 4)
            self.query_one("#sweep-result", Static).update(
                render(self.sweep, points, findings, self.environment, None, width)
            )

    def on_unmount(self) -> None:
        self.cancelled.set()  # the app is closing: the sweep engine stops at its next progress report

    def action_close(self) -> None:
        self.cancelled.set()
        self.dismiss(None)
