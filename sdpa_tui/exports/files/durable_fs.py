"""File-system steps a snapshot relies on: a new file flushed to disk, a directory's entries
made durable, and a directory renamed without ever replacing what is already there."""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from pathlib import Path
from typing import Any


def write_file(path: Path, text: str, newline: str | None = None) -> None:
    """Write ``text`` to a new file and flush it to disk."""
    with open(path, "x", encoding="utf-8", newline=newline) as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def fsync_dir(path: Path) -> None:
    """Best effort: make a rename or new entries in ``path`` durable (not all systems allow it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- renaming without ever replacing --------------------------------------------------------
_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_renameat2: Any = None  # None: not looked up yet; False: not available


def _get_renameat2() -> Any:
    global _renameat2
    if _renameat2 is None:
        _renameat2 = False
        if sys.platform.startswith("linux"):
            try:
                func = ctypes.CDLL(None, use_errno=True).renameat2
            except (OSError, AttributeError):
                pass
            else:
                func.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
                func.restype = ctypes.c_int
                _renameat2 = func
    return _renameat2


def rename_noreplace(src: Path, dst: Path) -> None:
    """Rename directory ``src`` to ``dst``; :class:`FileExistsError` if ``dst`` exists, never replacing it.

    Linux: ``renameat2(RENAME_NOREPLACE)``, atomic. Elsewhere (or on file systems without it):
    claim ``dst`` with ``mkdir`` (atomic, fails if it exists), then rename onto that empty
    directory of ours.
    """
    func = _get_renameat2()
    if func:
        if func(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            raise FileExistsError(err, os.strerror(err), str(dst))
        if err not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise OSError(err, os.strerror(err), str(dst))
    os.mkdir(dst)  # FileExistsError when taken
    try:
        os.rename(src, dst)
    except OSError as exc:
        try:
            os.rmdir(dst)  # ours, still empty (unless someone wrote into it: then it stays theirs)
        except OSError:
            pass
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise FileExistsError(exc.errno, os.strerror(exc.errno), str(dst)) from exc
        raise
