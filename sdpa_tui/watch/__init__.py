"""``sdpa-tui watch``: run a program with its SDPA calls counted, timed and explained; or, from inside Python,
``with watch() as w:``.

Where each part runs: ``probe/`` inside the watched program, with torch; ``from_python/`` in the user's own process,
which it watches by installing the probe there. The rest never imports torch: ``program/`` (the program started and
stopped, or the processes attached to), ``states/`` (the socket the probes send their states on, and each process's
latest), ``report/`` (the report in words, and the cells the Calls view shares), ``advice/`` (the alternatives
measured and the flagged calls replayed after the program exits).

Called, this package is the Python API's way in: ``from sdpa_tui import watch`` then ``with watch() as w: ...``
watches this process for the block (``from_python/watching.py``, imported, with torch, at the first call).
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _WatchPackage(types.ModuleType):
    def __call__(self, publish: str | None = None, name: str | None = None, kernel_windows: bool = True) -> Any:
        """``with watch() as w: ...``: this process's SDPA calls watched for the block, then ``w.report``.
        ``publish``: also send them to ``sdpa-tui watch --attach ADDRESS`` (a socket's path or HOST:PORT);
        ``name``: the report's program; ``kernel_windows``: profiler windows on CUDA (kernels, kernel times)."""
        from .from_python.watching import Watch

        return Watch(publish, name, kernel_windows)


sys.modules[__name__].__class__ = _WatchPackage
