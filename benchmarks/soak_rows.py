"""What soak.py keeps of its samples, and the UI process's own heap, read without growing it.

The soak runs the app in its own process, so whatever the soak keeps in memory counts as the UI's RSS. Its samples,
kept as a list of dicts, grew about 0.74 KiB a sample (0.25 MiB an hour at one every 10 s: most of the 0.32 MiB an
hour the 2-hour CPU soak of 2026-11-26 measured after the history's bound). :class:`RowLog` writes each sample to a
JSON-lines file as it is taken and reads them back once the app has exited.

:func:`heap_reading` separates live memory from the allocator's keep: Python's allocated blocks (pymalloc and
every object, ``sys.getallocatedblocks``) and what glibc's malloc has handed out and holds (``mallinfo2``), so a
growing RSS can be told apart as objects kept or memory the allocators keep after use.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any


class RowLog:
    """Samples appended to a JSON-lines file, one line each, flushed as written; nothing kept in memory but the
    last sample's time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = path.open("w")
        self.count = 0
        self.last_elapsed_s: float | None = None

    @classmethod
    def temporary(cls) -> RowLog:
        descriptor, name = tempfile.mkstemp(prefix="sdpa-tui-soak-", suffix=".jsonl")
        os.close(descriptor)
        return cls(Path(name))

    def append(self, row: dict[str, Any]) -> None:
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()
        self.count += 1
        self.last_elapsed_s = row["elapsed_s"]

    def close(self) -> None:
        self._file.close()

    def rows(self) -> list[dict[str, Any]]:
        """Every sample, read back (call once the measuring is over)."""
        with self.path.open() as f:
            return [json.loads(line) for line in f if line.strip()]


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _mallinfo2() -> Any | None:
    try:
        function = ctypes.CDLL(None).mallinfo2  # glibc 2.33 and later
    except (AttributeError, OSError):
        return None
    function.restype = _MallInfo2
    return function


_MALLINFO2 = _mallinfo2()


def heap_reading() -> dict[str, float | None]:
    """``ui_py_blocks_k``: Python's allocated blocks (thousands); ``ui_malloc_used_mib``: bytes glibc's malloc has
    handed out and not had back (heap and mmap); ``ui_malloc_held_mib``: what its heap holds, used or free (None
    where there is no glibc)."""
    reading: dict[str, float | None] = {"ui_py_blocks_k": sys.getallocatedblocks() / 1000.0,
                                        "ui_malloc_used_mib": None, "ui_malloc_held_mib": None}
    if _MALLINFO2 is not None:
        info = _MALLINFO2()
        reading["ui_malloc_used_mib"] = (info.uordblks + info.hblkhd) / 2**20
        reading["ui_malloc_held_mib"] = (info.arena + info.hblkhd) / 2**20
    return reading


HEAP_SERIES = ("ui_py_blocks_k", "ui_malloc_used_mib", "ui_malloc_held_mib")
