"""``sdpa-tui watch``: run a program with its SDPA calls counted, timed and explained.

``probe/`` runs inside the watched program and imports torch; the rest is the parent's side (the program run and its
states collected, the report, the advice measured after it exits, the saved calls' replay asked for) and never does.

Called, this package is the Python API's way in: ``from sdpa_tui import watch`` then ``with watch() as w: ...``
watches this process for the block (``sdpa_tui/api/watching.py``, imported, with torch, at the first call).
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
        from ..api.watching import Watch

        return Watch(publish, name, kernel_windows)


sys.modules[__name__].__class__ = _WatchPackage
