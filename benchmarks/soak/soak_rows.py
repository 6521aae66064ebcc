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


ARENA_BYTES = 1 << 20
"""pymalloc's arena on 64-bit CPython 3.10 and later (its own report says "N arenas * 1048576 bytes/arena")."""


def status_mib(pid: int | str, *fields: str) -> dict[str, float | None]:
    """``fields`` of ``/proc/PID/status`` (``VmRSS``, ``RssAnon``...), in MiB; None where the process is gone or the
    field is missing."""
    reading: dict[str, float | None] = dict.fromkeys(fields)
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in reading:
                reading[name] = int(value.split()[0]) / 1024.0
    except OSError:
        pass
    return reading


def rss_split(pid: int | str = "self") -> dict[str, float | None]:
    """The resident memory by kind: anonymous (heaps, arenas, stacks) and file-backed (the pages of libraries and
    files mapped in, which grow as code not run before runs, up to their size)."""
    status = status_mib(pid, "RssAnon", "RssFile")
    return {"ui_rss_anon_mib": status["RssAnon"], "ui_rss_file_mib": status["RssFile"]}


def pymalloc_reading() -> dict[str, float | None]:
    """Python's small-object allocator (``sys._debugmallocstats``, which prints to C's stderr: read through a file
    put on descriptor 2 for the call): the arenas it holds and the bytes of their blocks in use, in MiB."""
    reading: dict[str, float | None] = {"ui_pymalloc_arenas_mib": None, "ui_pymalloc_used_mib": None}
    with tempfile.TemporaryFile() as sink:
        kept = os.dup(2)
        try:
            os.dup2(sink.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(kept, 2)
            os.close(kept)
        sink.seek(0)
        text = sink.read().decode(errors="replace")
    for line in text.splitlines():
        name, _, value = line.partition("=")
        number = value.strip().replace(",", "")
        if name.strip() == "# arenas allocated current" and number.isdigit():
            reading["ui_pymalloc_arenas_mib"] = int(number) * ARENA_BYTES / 2**20
        elif name.strip() == "# bytes in allocated blocks" and number.isdigit():
            reading["ui_pymalloc_used_mib"] = int(number) / 2**20
    return reading


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


def memory_reading() -> dict[str, float | None]:
    """Every reading of the UI process's memory a soak sample takes, beside its RSS."""
    return {**rss_split(), **pymalloc_reading(), **heap_reading()}


HEAP_SERIES = ("ui_rss_anon_mib", "ui_rss_file_mib", "ui_pymalloc_arenas_mib", "ui_pymalloc_used_mib",
               "ui_py_blocks_k", "ui_malloc_used_mib", "ui_malloc_held_mib")
