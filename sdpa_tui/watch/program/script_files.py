"""The script a watched command names, as python opens it: the bootstrap runs it, and ``sdpa-tui watch`` asks first
whether python could open it (a missing script gets python's one line and exit 2, and nothing of watch's)."""

from __future__ import annotations

import io
import os
import pkgutil


def absolute(arg: str) -> str:
    """The script's path as python makes it absolute: joined to the working directory, not normalized."""
    return os.path.join(os.getcwd(), arg)


def cannot_open_line(name: str, path: str, exc: OSError) -> str:
    """Python's one line for a script it cannot open."""
    return f"{name}: can't open file '{path}': [Errno {exc.errno}] {exc.strerror}"


def unopenable_script(arg: str, name: str) -> str | None:
    """Python's one line when ``name arg`` would fail to open its script; None for a script it can open, a folder
    or a zip file."""
    path = absolute(arg)
    if pkgutil.get_importer(path) is not None:
        return None
    try:
        with io.open_code(path):
            return None
    except OSError as exc:
        return cannot_open_line(name, path, exc)
