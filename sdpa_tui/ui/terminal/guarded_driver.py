"""The live app's terminal driver: Textual's LinuxDriver writing through a :class:`TerminalStream` that drops writes
to a dead terminal and asks the app to exit, instead of letting Textual's writer thread die on the first EIO (after
which the app blocks on its full output queue and can never exit).

The stream is put in through :func:`~.textual_internals.wrap_driver_output`: Textual has no public way to give a
driver another output stream.
"""

from __future__ import annotations

import signal
from typing import Protocol

from .textual_internals import wrap_driver_output

EXIT_TERMINAL_LOST = 128 + signal.SIGHUP
"""Exit status when the terminal went away: the same as for SIGHUP."""


class ExitRequester(Protocol):
    def request_exit(self, return_code: int, reason: str) -> None: ...


class TerminalStream:
    """What Textual's writer thread writes the screen to: the real stream, except that once
    the terminal is gone (EIO after a hang-up, EPIPE, a closed file) writes are dropped and
    the app is asked to exit. Textual's writer thread dies on the first such error, after
    which the app blocks on its full output queue and can never exit."""

    def __init__(self, stream: object, app: ExitRequester) -> None:
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


def guarded_linux_driver() -> type | None:
    """Textual's LinuxDriver writing through a :class:`TerminalStream` (None off Linux)."""
    if _GUARDED_DRIVER:
        return _GUARDED_DRIVER[0]
    try:
        from textual.drivers.linux_driver import LinuxDriver
    except ImportError:  # Windows: no termios
        return None

    class GuardedLinuxDriver(LinuxDriver):
        def __init__(self, app: ExitRequester, **kwargs: object) -> None:
            super().__init__(app, **kwargs)  # type: ignore[arg-type]
            wrap_driver_output(self, lambda stream: TerminalStream(stream, app))

    _GUARDED_DRIVER.append(GuardedLinuxDriver)
    return GuardedLinuxDriver
