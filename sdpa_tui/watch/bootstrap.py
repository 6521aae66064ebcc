"""``python -m sdpa_tui.watch.bootstrap <script|-m module> args``: run a program as plain python would, watched.

``runpy`` gives the program the ``sys.argv`` and ``__main__`` it would have had. The probe
is installed before the program's first line; the final state is sent when it ends, crashes
or is interrupted, and the exit code is the one plain python would give.
"""

from __future__ import annotations

import os
import runpy
import sys

from .channel import SOCKET_ENV, StateSender


def main(argv: list[str]) -> int:
    if not argv or argv[0] == "-m" and len(argv) < 2:
        print("usage: python -m sdpa_tui.watch.bootstrap <script.py|-m module> [args...]", file=sys.stderr)
        return 2
    path = os.environ.pop(SOCKET_ENV, None)  # not inherited by the program's own subprocesses
    from .probe import format_exception, install

    probe = install(StateSender(path) if path else None)
    error = ""
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit:
        probe.finish()
        raise
    except BaseException as exc:
        error = format_exception(exc)
        probe.finish(error)
        raise
    probe.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
