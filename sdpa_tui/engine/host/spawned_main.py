"""What a spawned engine imports before its own entry point.

multiprocessing's spawn method runs the parent's ``__main__`` again in each child (as ``__mp_main__``), so that
what the parent defined there can be unpickled. Run as ``python -m sdpa_tui``, the main module is a package's
``__main__`` and the child skips it; run as ``sdpa-tui``, the command pip installs, it is that command's script,
and every engine imported ``sdpa_tui.cli`` and all the command line imports before its own, on its way to importing
torch, at every start and restart of an engine (0.01-0.16 s on H100s, about 0.1 s on the project's CPU machine:
docs/lab-notes/gpu-measurements.md).

:func:`spawn_children_without_the_script` tells multiprocessing that this command's main module is the package's
``__main__``, which it is: the script only calls the same ``main``. Nothing is changed for any other main module (a
test runner, a user's program under ``watch``, an interactive session), but for the time
:func:`spawning_past_the_main_module` lasts.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

PACKAGE_MAIN = "sdpa_tui.__main__"


def spawn_children_without_the_script(entry: Callable[..., object]) -> bool:
    """Give the running ``sdpa-tui`` script (a ``__main__`` with no module spec whose ``main`` is ``entry``) the
    spec of ``python -m sdpa_tui``; True when it did."""
    main = sys.modules.get("__main__")
    if main is None or getattr(main, "__spec__", None) is not None or getattr(main, "main", None) is not entry:
        return False
    spec = importlib.util.find_spec(PACKAGE_MAIN)
    if spec is None:
        return False
    main.__spec__ = spec
    return True


@contextmanager
def spawning_past_the_main_module() -> Iterator[None]:
    """While it lasts, an engine spawned from a user's own program (the Python API's advice) skips the program's
    main module, as spawned children of ``python -m sdpa_tui`` do: multiprocessing runs a main module with a file and
    no spec again in each child, and code of a script that is not under ``if __name__ == "__main__":`` (a training
    run) would run again in every engine. The main module's own ``__spec__`` is put back after."""
    main = sys.modules.get("__main__")
    spec = importlib.util.find_spec(PACKAGE_MAIN)
    if main is None or spec is None or getattr(main, "__spec__", None) is not None:
        yield
        return
    had = "__spec__" in vars(main)
    main.__spec__ = spec
    try:
        yield
    finally:
        if had:
            main.__spec__ = None
        else:
            del main.__spec__
