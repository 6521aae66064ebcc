"""``python -m sdpa_tui.watch.probe.bootstrap [--as NAME] <script|-m module> args``: run a program as plain python would, watched.

The program gets the ``sys.argv``, ``__file__``, ``sys.path[0]`` and ``__main__`` plain python gives
it; the probe is installed before its first line. The final state is sent when it ends, crashes or
is interrupted. What the user sees is python's: the traceback python prints (no frame of the
bootstrap's), python's one line for a missing script or module, and python's exit code.
``--as``: the interpreter as the user typed it (python names it in "can't open file").
"""

from __future__ import annotations

import builtins
import importlib.abc
import importlib.machinery
import importlib.util
import io
import marshal
import os
import pkgutil
import runpy
import sys
import types

from ..program.script_files import absolute, cannot_open_line
from ..states.state_socket import SOCKET_ENV, StateSender

_OWN_MAIN: list[types.ModuleType] = []  # the bootstrap's own __main__, kept alive once the program's replaces it


def main(argv: list[str]) -> int:
    name = sys.executable
    if argv[:1] == ["--as"] and len(argv) > 1:
        name, argv = argv[1], argv[2:]
    if not argv or argv[0] == "-m" and len(argv) < 2:
        print("usage: python -m sdpa_tui.watch.probe.bootstrap [--as NAME] <script.py|-m module> [args...]", file=sys.stderr)
        return 2
    source = None
    if argv[0] != "-m" and pkgutil.get_importer(absolute(argv[0])) is None:  # a file: no folder or zip
        source = _read_script(argv[0], name)
        if source is None:
            return 2  # python's code for a script it cannot open
    path = os.environ.get(SOCKET_ENV)  # inherited: the program's own Python processes are watched too
    from .install import flush_on_sigterm, format_exception, install

    probe = install(StateSender(path) if path else None)
    flush_on_sigterm(probe)
    try:
        if argv[0] == "-m":
            sys.argv = ["-m", *argv[2:]]  # python's while the module is looked up; then its file
            _fresh_main()
            runpy._run_module_as_main(argv[1])  # what ``python -m`` calls; a module not found: SystemExit
        else:
            sys.argv = list(argv)
            _run_script(argv[0], source)
    except SystemExit:
        probe.finish(at_exit=True)
        raise
    except BaseException as exc:
        exc.with_traceback(_program_frames(exc.__traceback__))
        probe.finish(format_exception(exc), at_exit=True)
        sys.excepthook(type(exc), exc, exc.__traceback__)  # what python does with an uncaught exception
        sys.excepthook = _printed  # the re-raise then only gives python's exit (1, or SIGINT's)
        raise
    probe.finish(at_exit=True)
    return 0


def _read_script(arg: str, name: str) -> bytes | None:
    """The script's bytes; None, with python's one line on stderr, when it cannot be opened."""
    path = absolute(arg)
    try:
        with io.open_code(path) as f:
            return f.read()
    except OSError as exc:
        print(cannot_open_line(name, path, exc), file=sys.stderr)
        return None


def _run_script(arg: str, source: bytes | None) -> None:
    """``python arg``: a fresh ``__main__`` with ``__file__`` absolute, the script's real folder first
    on ``sys.path`` where ``python -m`` put the working directory (none with -P). ``source`` None:
    a folder or zip file, first on ``sys.path`` (even with -P) and run by its ``__main__.py``."""
    path = absolute(arg)
    safe_path = getattr(sys.flags, "safe_path", False)
    if source is None:
        sys.path[0:0 if safe_path else 1] = [path]
        _fresh_main()
        runpy._run_module_as_main("__main__", alter_argv=False)  # what ``python folder`` calls
        return
    if not safe_path:
        sys.path[0] = os.path.dirname(os.path.realpath(path))
    if source[:4] == importlib.util.MAGIC_NUMBER:
        code = marshal.loads(source[16:])
        loader: importlib.abc.Loader = importlib.machinery.SourcelessFileLoader("__main__", path)
    else:
        code = compile(source, path, "exec", dont_inherit=True)  # not the bootstrap's __future__ imports
        loader = importlib.machinery.SourceFileLoader("__main__", path)
    namespace = _fresh_main()
    namespace.update(__file__=path, __loader__=loader, __cached__=None)
    exec(code, namespace)


def _fresh_main() -> dict:
    """A new ``__main__`` module for the program (the bootstrap's own stays alive); its namespace."""
    _OWN_MAIN.append(sys.modules["__main__"])
    module = types.ModuleType("__main__")
    module.__builtins__ = builtins
    sys.modules["__main__"] = module
    return module.__dict__


def _program_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback from the frame python would show first: the bootstrap's own dropped (runpy's
    stay for ``-m``, as python shows them)."""
    while tb is not None and tb.tb_frame.f_globals is globals():
        tb = tb.tb_next
    return tb


def _printed(*exc_info: object) -> None:
    """``sys.excepthook`` once the bootstrap has printed the program's exception."""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
