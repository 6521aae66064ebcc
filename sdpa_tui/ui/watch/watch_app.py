"""``sdpa-tui watch``'s app: the live monitor (the lab) with the watched program's Calls view on top.

The program runs as a child process (:class:`~sdpa_tui.watch.program.watched_program.WatchedProgram`); its
probe's states arrive on the runner's listener threads, which keep only the latest per process
under a lock. A 2 Hz timer here takes a copy of them (no waiting) and redraws the Calls view,
and reads what the program added to its log file. The lab's engine rests while the Calls view
shows, so the watched program has the GPU to itself until the user asks for the lab.
"""

from __future__ import annotations

from typing import Protocol

from textual.binding import Binding

from ...core.calls.advice import AdviceProgress
from ...core.calls.watch_lab import lab_workload
from ...core.calls.watch_report import Advisor, CallRow, WatchReport
from ...core.workload import WorkloadError
from ..app import SdpaApp
from ..live_app import LiveApp
from .calls import CallsScreen
from .log_tail import LogTail

POLL_INTERVAL_S = 0.5
"""How often the program's states and log are read (the probe sends at most twice a second)."""
LAB_ACTIONS = frozenset(b.action.split("(")[0] for b in SdpaApp.BINDINGS) - {"quit", "help"}
"""The lab's keys: off while the Calls view shows (they would change a lab nobody sees)."""


class Program(Protocol):
    """What the app needs of the watched program (:class:`WatchedProgram`; tests feed recorded states)."""

    display: list[str]

    def start(self) -> None: ...
    def poll(self) -> int | None: ...
    def report(self, exit_code: int | None) -> WatchReport: ...
    def close(self) -> None: ...


class WatchApp(LiveApp):
    BINDINGS = [*LiveApp.BINDINGS,
                Binding("a", "show_calls", "Calls", tooltip="back to the watched program's calls (the lab rests there)")]

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.program: Program | None = None
        self.log_path = ""
        self.exit_code: int | None = None
        self.stopped_by_ui = False
        self.calls: CallsScreen | None = None
        self._tail: LogTail | None = None
        self._program_closed = False
        self.advisor: Advisor | None = None  # ``b`` in the Calls view (given by the top-level CLI)
        self._advising = False

    def watch_program(self, program: Program, log_path: str) -> None:
        """Set before ``run``: the program to start once the UI is up, and the file its output goes to."""
        self.program = program
        self.log_path = log_path
        self._tail = LogTail(log_path)

    # -- lifecycle -------------------------------------------------------------------------
    def lab_started(self) -> None:
        super().lab_started()
        self.call_later(self._start_watching)  # once the mount is over: the Calls view is pushed over the lab

    async def _start_watching(self) -> None:
        assert self.program is not None, "watch_program() before run()"
        calls = CallsScreen(" ".join(self.program.display), self.log_path)
        self.install_screen(calls, name="calls")
        await self.push_screen("calls")
        self.calls = calls
        self.engine.set_paused(True)
        self.program.start()
        self.set_interval(POLL_INTERVAL_S, lambda: self.while_open(self.poll_program))
        self.poll_program()

    def lab_stopping(self) -> None:
        self.stop_program()
        super().lab_stopping()

    def stop_program(self) -> None:
        """Stop the program (SIGINT to its process group, SIGKILL after a grace period) and what it left behind."""
        if self.program is None or self._program_closed:
            return
        self._program_closed = True
        if self.exit_code is None:
            self.exit_code = self.program.poll()
            self.stopped_by_ui = self.exit_code is None
        self.program.close()

    # -- polling ---------------------------------------------------------------------------
    def poll_program(self) -> None:
        """Never blocks: the runner's states are copied under a lock, the log read is bounded."""
        if self.program is None or self.calls is None:
            return
        ended_now = False
        if self.exit_code is None:
            self.exit_code = self.program.poll()
            ended_now = self.exit_code is not None
        report = self.program.report(self.exit_code)
        self.calls.show(report, self.exit_code)
        if self._tail is not None:
            self.calls.write_log(self._tail.read_new())
        if ended_now:
            text = f"the watched program exited with code {self.exit_code}; its calls stay in the Calls view (a)"
            self.status(text, error=self.exit_code != 0)
            if self.screen is not self.calls:
                self.notify(text, severity="error" if self.exit_code else "information")

    # -- advice ------------------------------------------------------------------------------
    def advise_calls(self) -> None:
        """``b``: every call's alternatives measured in an engine of their own, once the program has exited (it
        would share the GPU otherwise); the Calls view then shows the best, its saving and the code."""
        if self.advisor is None:
            self.notify("advice is not available here", severity="warning")
            return
        if self.exit_code is None:
            self.notify("advice is measured once the program has exited (measuring meanwhile would share the GPU "
                        "with it and slow it down)", severity="warning", timeout=8)
            return
        if self._advising or self.program is None or self.calls is None:
            return
        self._advising = True
        self.notify("measuring every call's alternatives (one engine per device, about a second per call "
                    "signature, within a time budget)…", timeout=6)
        self.run_worker(self._advise, thread=True, exclusive=True, group="advice", exit_on_error=False)

    def _advise(self) -> None:
        assert self.program is not None and self.calls is not None and self.advisor is not None
        report = self.program.report(self.exit_code)
        calls = self.calls

        def progress(step: AdviceProgress) -> None:
            self.call_from_thread(setattr, calls, "advice_progress", step.line())

        try:
            self.advisor(report, lambda text: self.call_from_thread(self.notify, text.removeprefix("sdpa-tui watch: ")),
                         progress=progress)
        except Exception as exc:  # noqa: BLE001 - said, and the Calls view stays as it was
            self.call_from_thread(self.notify, f"advice failed: {exc}", severity="error", timeout=10)
            return
        finally:
            self._advising = False
            self.call_from_thread(setattr, calls, "advice_progress", "")
        self.call_from_thread(self.calls.set_advice, report)
        # the notice in a line or two; what was left out, and why, under the selected call (the whole note)
        more = "; more under the selected call" if report.advice_left_out else ""
        self.call_from_thread(self.notify, (report.advice_measured or "advice measured") + more, timeout=8)

    # -- switching views -------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.calls is not None and self.screen is self.calls and (action in LAB_ACTIONS or action == "show_calls"):
            return False
        return True

    def action_show_calls(self) -> None:
        if self.calls is not None and self.screen is not self.calls:
            self.push_screen("calls")
            self.engine.set_paused(True)

    def show_lab(self) -> None:
        if self.calls is not None and self.screen is self.calls:
            self.pop_screen()
            self.engine.set_paused(self.paused)
            self.redraws.request()

    def try_in_lab(self, row: CallRow) -> None:
        """The call's shape becomes the lab's workload; every enabled backend is measured on it."""
        try:
            workload, differences = lab_workload(row.signature)
        except WorkloadError as exc:
            self.notify(f"the lab cannot measure this call: {exc}", severity="error", timeout=8)
            return
        env = self.session.environment
        device = row.signature.device.split(":")[0]
        if env is not None and (device == "cpu") != env.is_cpu:
            differences.append(f"the call ran on {row.signature.device}; the lab measures on {'the CPU' if env.is_cpu else 'the GPU'}")
        if set(row.signature.flags) != {b.value for b in self.controller.flags} and row.signature.flags:
            differences.append("the call ran with other flags in force (see its row); the lab keeps its own")
        self.show_lab()
        self.set_workload(workload)
        note = f"lab: the call at {row.site} ({workload.describe()})"
        self.status(note + ("; " + "; ".join(differences) if differences else ""))
