"""Build the app (``make_app``, usable from tests) and run it from the command line (``run_app``).

Leaving cleanly (README, "When things go wrong"): whatever ends the session, the app
exits through Textual's normal shutdown, whose unmount stops the engine
(:meth:`EngineSupervisor.stop`: Shutdown, join, terminate, kill), so no engine is left
holding GPU memory:

- ``q``, ``ctrl+q`` and ``ctrl+c``. Textual 8 reads the terminal in raw mode (no ISIG), so
  ctrl+c is a key, not SIGINT, and Textual binds it to ``help_quit``, which only shows
  "Press ctrl+q to quit". :class:`LiveApp` binds it to quit (a focused text input still
  gets it first, as copy).
- SIGHUP (the SSH connection or the terminal window closed), SIGTERM, SIGINT
  (``kill -INT``): Textual installs no handler for them, so by default the process dies on
  the spot, the terminal is left in raw/alternate-screen mode and the engine only goes
  because of its PR_SET_PDEATHSIG. :func:`exit_on_signals` turns them into ``app.exit``
  (exit status 128 + signal number), and arms a last-resort timer that kills the engine
  and ends the process if the orderly exit has not finished in ``FORCE_EXIT_AFTER_S``.
- The terminal goes away without a signal (stdin hung up or closed, writes failing with
  EIO): :class:`LiveApp` polls the terminal, and its driver drops writes to a dead
  terminal (Textual's writer thread would die on the first EIO, after which the app
  blocks on its full output queue and never exits).
- ``kill -9`` of the UI: nothing can run; the engine gets SIGTERM from PR_SET_PDEATHSIG.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import select
import signal
import sys
import threading
from collections.abc import Iterator
from multiprocessing import resource_tracker
from typing import TYPE_CHECKING

from textual.binding import Binding

from ..core.backends import Backend
from ..core.engine_commands import ENGINE_MEMORY_MIB
from ..core.session import Session
from ..core.workload import Workload
from ..device_choice import find_gpus
from ..engine.device_engines import DeviceEngines, engine_device
from ..engine.supervisor import EngineSupervisor
from ..telemetry.host_cpu import cpu_pressure
from .app import SdpaApp
from .gpu_switching import host_gpu_source
from .messages import DeviceEvent, DeviceRecords, EngineEvent, EngineRecords

if TYPE_CHECKING:
    from ..exports.metrics import LatestMetrics

METRICS_INTERVAL_S = 1.0
"""How often ``--metrics-port`` publishes the session to the metrics endpoint."""
EXIT_SIGNALS = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)
"""Signals that end the app the orderly way (engine stopped, terminal restored)."""
FORCE_EXIT_AFTER_S = 20.0
"""After an exit signal, the longest the orderly exit may take before the process kills the
engine and ends itself (a stuck exit must not leave the engine holding the GPU)."""
TERMINAL_CHECK_S = 0.5
EXIT_TERMINAL_LOST = 128 + signal.SIGHUP
"""Exit status when the terminal went away: the same as for SIGHUP."""
SERVED_DRIVER = "textual.drivers.web_driver:WebDriver"
"""The ``TEXTUAL_DRIVER`` textual-serve sets for the app process of each browser session."""


def served_by_textual_serve() -> bool:
    """Whether this process is a browser session started by ``sdpa-tui serve`` (no TTY, by design)."""
    return os.environ.get("TEXTUAL_DRIVER") == SERVED_DRIVER
def make_app(
    workload: Workload,
    backends: tuple[Backend, ...],
    device: str = "auto",
    export_dir: str = "sdpa-tui-exports",
    legacy_api: bool = False,
    priority: tuple[Backend, ...] = (),
    engine_memory_mib: float = ENGINE_MEMORY_MIB,
    devices: tuple[int, ...] | None = None,
    app_class: type[LiveApp] | None = None,
) -> SdpaApp:
    """The real app: an engine process for ``device`` (or one per GPU in ``devices``, side by
    side) and an NVML poller for every GPU of the host. ``app_class``: a :class:`LiveApp`
    subclass (``sdpa-tui watch``'s)."""
    # Spawning the engine needs multiprocessing's resource tracker, which passes on
    # sys.stderr's descriptor: start it now, while sys.stderr is the real one (a running
    # Textual app replaces it with an object that has none).
    resource_tracker.ensure_running()
    session = Session(workload, backends)
    session.legacy_api = legacy_api
    if devices:
        engines_see = find_gpus()  # once, for the first GPU and every engine
        device = engine_device(devices[0], engines_see)
    app = (app_class or LiveApp)(session, engine=None, gpu_source=None, export_dir=export_dir, device=device)
    app.gpu_source = host_gpu_source(app)
    app.priority = priority
    app.recycle_growth_mib = engine_memory_mib
    app.host_pressure_source = cpu_pressure  # the header says when the host's CPUs are contended
    if devices:  # one engine per GPU, side by side
        app.engine = DeviceEngines(devices, on_records=lambda i, records: app.post_message(DeviceRecords(i, records)),
                                   on_event=lambda i, event: app.post_message(DeviceEvent(i, event)), gpus=engines_see)
        return app
    app.engine = EngineSupervisor(
        device,
        on_records=lambda records: app.post_message(EngineRecords(records)),
        on_event=lambda event: app.post_message(EngineEvent(event)),
    )
    return app


class LiveApp(SdpaApp):
    """:class:`SdpaApp` as ``sdpa-tui`` runs it, with ways out that always stop the engine.

    - ``ctrl+c`` quits (Textual's own binding only tells you to press ctrl+q);
    - :meth:`request_exit` quits from a signal handler or any thread, without blocking;
    - with ``watch_terminal`` (set by :func:`run_app`), a hung-up or closed terminal quits.
    """

    BINDINGS = [*SdpaApp.BINDINGS, Binding("ctrl+c", "quit", "Quit", show=False)]

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.watch_terminal = False
        self.metrics: LatestMetrics | None = None
        """Set for ``--metrics-port``: the collector the metrics endpoint serves."""
        self.exit_reason: str | None = None
        """Why the app was asked to exit from outside (a signal, the terminal), if it was."""
        self._exit_loop: asyncio.AbstractEventLoop | None = None
        self._pending_exit: int | None = None
        self._terminal_poll: select.poll | None = None

    def get_driver_class(self) -> type:
        driver = super().get_driver_class()
        guarded = _guarded_linux_driver()
        return guarded if guarded is not None and driver is guarded.__base__ else driver

    def request_exit(self, return_code: int, reason: str) -> None:
        """Ask the app to exit; safe from a signal handler and from other threads."""
        if self.exit_reason is None:
            self.exit_reason = reason
        loop = self._exit_loop
        if loop is None:
            try:
                loop = asyncio.get_running_loop()  # a signal handler, in the app's own thread
            except RuntimeError:
                loop = None
        if loop is None or loop.is_closed():
            self._pending_exit = return_code  # not running yet: exit as soon as it loads
            return
        try:
            loop.call_soon_threadsafe(self._exit_now, return_code)
        except RuntimeError:  # the loop closed meanwhile: the app has already ended
            pass

    def _exit_now(self, return_code: int) -> None:
        if not getattr(self, "_exit", False):  # already exiting (q, an earlier signal): keep its code
            self.exit(return_code=return_code)

    def on_load(self) -> None:
        self._exit_loop = asyncio.get_running_loop()
        if self._pending_exit is not None:
            self.exit(return_code=self._pending_exit)

    def on_mount(self) -> None:
        if self.metrics is not None:  # --metrics-port: publish from this thread, the one owning the session
            self.set_interval(METRICS_INTERVAL_S, lambda: self.metrics.publish(self.session, self.gpu))
        if self.watch_terminal:
            self._terminal_poll = _terminal_poll()
            self.set_interval(TERMINAL_CHECK_S, self._check_terminal)

    def _check_terminal(self) -> None:
        if self._terminal_poll is None:
            return
        try:
            gone = [fd for fd, flags in self._terminal_poll.poll(0)
                    if flags & (select.POLLHUP | select.POLLERR | select.POLLNVAL)]
        except OSError:
            gone = [-1]
        if gone:
            self._terminal_poll = None
            self.request_exit(EXIT_TERMINAL_LOST, "the terminal was closed (input hung up)")


def _terminal_poll() -> select.poll | None:
    """A poll object on the terminal's input and output descriptors: only hang-up and error
    conditions are asked for, so a pending key press does not count."""
    poll = select.poll()
    fds = set()
    for stream in (sys.__stdin__, sys.__stderr__):
        try:
            fds.add(stream.fileno())
        except (AttributeError, OSError, ValueError):
            pass
    for fd in fds:
        poll.register(fd, 0)  # POLLHUP, POLLERR and POLLNVAL are always reported
    return poll if fds else None


class _TerminalStream:
    """What Textual's writer thread writes the screen to: the real stream, except that once
    the terminal is gone (EIO after a hang-up, EPIPE, a closed file) writes are dropped and
    the app is asked to exit. Textual's writer thread dies on the first such error, after
    which the app blocks on its full output queue and can never exit."""

    def __init__(self, stream: object, app: LiveApp) -> None:
        self._stream = stream
        self._app = app
        self.lost = False

    def write(self, text: str) -> int:
        if not self.lost:
            try:
                return self._stream.write(text)
            except (OSError, ValueError) as exc:
                self._lose(exc)
        return len(text)

    def flush(self) -> None:
        if not self.lost:
            try:
                self._stream.flush()
            except (OSError, ValueError) as exc:
                self._lose(exc)

    def _lose(self, exc: BaseException) -> None:
        self.lost = True
        self._app.request_exit(EXIT_TERMINAL_LOST, f"the terminal is gone ({type(exc).__name__}: {exc})")

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


_GUARDED_DRIVER: list[type] = []


def _guarded_linux_driver() -> type | None:
    """Textual's LinuxDriver writing through a :class:`_TerminalStream` (None off Linux)."""
    if _GUARDED_DRIVER:
        return _GUARDED_DRIVER[0]
    try:
        from textual.drivers.linux_driver import LinuxDriver
    except ImportError:  # Windows: no termios
        return None

    class GuardedLinuxDriver(LinuxDriver):
        def __init__(self, app: LiveApp, **kwargs: object) -> None:
            super().__init__(app, **kwargs)
            self._file = _TerminalStream(self._file, app)

    _GUARDED_DRIVER.append(GuardedLinuxDriver)
    return GuardedLinuxDriver


@contextlib.contextmanager
def exit_on_signals(app: LiveApp, signals: tuple[signal.Signals, ...] = EXIT_SIGNALS,
                    force_after_s: float = FORCE_EXIT_AFTER_S) -> Iterator[None]:
    """While the app runs, SIGHUP/SIGTERM/SIGINT make it exit the orderly way (engine
    stopped, terminal restored, exit status 128 + signal number). Call from the main thread.

    The handler only schedules ``app.exit`` on the app's event loop (Python runs signal
    handlers in the main thread, the one running that loop) and starts a daemon timer: if
    the process is still there ``force_after_s`` later, the timer kills the engine and ends
    the process, so a stuck shutdown cannot leave an engine holding the GPU.
    """
    force: list[threading.Timer] = []

    def handler(signum: int, frame: object) -> None:
        app.request_exit(128 + signum, f"{signal.Signals(signum).name} received")
        if not force:
            timer = threading.Timer(force_after_s, _force_exit, args=(app, 128 + signum))
            timer.daemon = True
            timer.name = "sdpa-tui-force-exit"
            force.append(timer)
            timer.start()

    previous = {sig: signal.signal(sig, handler) for sig in signals}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
        # an armed timer stays armed: it also covers a hang after the app has returned


def _force_exit(app: LiveApp, code: int) -> None:
    try:
        app.engine.kill_engine()
    finally:
        os._exit(code)


def run_app(args: argparse.Namespace, workload: Workload, backends: tuple[Backend, ...]) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()) and not served_by_textual_serve():
        print(
            "sdpa-tui: no terminal here (stdin/stdout is not a TTY). "
            "For scripts and CI use: sdpa-tui report [options] (--json/--markdown to save)",
            file=sys.stderr,
        )
        return 2
    app = make_app(workload, backends, args.device, os.path.expanduser(args.export_dir),
                   legacy_api=args.legacy_api, priority=args.priority, engine_memory_mib=args.engine_memory_mib,
                   devices=getattr(args, "devices", None))
    app.watch_terminal = True
    server = None
    if getattr(args, "metrics_port", None) is not None:
        from ..exports.metrics import LatestMetrics  # prometheus_client only when asked for
        from ..exports.metrics_server import MetricsServerError, serve_metrics

        app.metrics = LatestMetrics(args.device)
        try:
            server = serve_metrics(app.metrics, args.metrics_port, args.metrics_address)
        except MetricsServerError as exc:
            print(f"sdpa-tui: error: {exc}", file=sys.stderr)
            return 2
    app.engine.start()  # import torch overlaps the UI's own start; the app's mount finds it started
    try:
        with exit_on_signals(app):
            app.run()
    finally:
        if server is not None:
            server.stop()
    if app.exit_reason:
        with contextlib.suppress(OSError, ValueError):  # the terminal may be gone
            print(f"sdpa-tui: {app.exit_reason}: engine stopped, exiting", file=sys.stderr)
    return app.return_code or 0
