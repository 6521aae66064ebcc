"""Files that ``report`` and ``sweep`` write after measuring (``--json``, ``--markdown``, ``--csv``),
and ``watch --report`` after the program: checked before anything is measured or run, by making a file
where the report will go and removing it, so a mistyped or read-only folder costs no measurement."""

from __future__ import annotations

import argparse
import os
import tempfile

OUTPUT_OPTIONS = ("json", "markdown", "csv")


def check_output_paths(args: argparse.Namespace) -> None:
    """Raise ``ValueError`` naming the option when a file it names cannot be written."""
    for name in OUTPUT_OPTIONS:
        path = getattr(args, name, None)
        if isinstance(path, str):  # not absent, nor compare's --json/--markdown switches
            check_output_path(f"--{name}", path)


def check_output_path(option: str, path: str) -> None:
    """Raise ``ValueError`` naming ``option`` when ``path`` cannot be written."""
    if os.path.isdir(path):
        raise ValueError(f"{option} {path}: is a directory; name a file in it")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        blocker = next((p for p in _parents(folder) if os.path.exists(p) and not os.path.isdir(p)), None)
        if blocker is not None:
            raise ValueError(f"{option} {path}: {blocker} is a file, not a folder")
        raise ValueError(f"{option} {path}: the folder {folder} does not exist")
    try:  # as the writer will (atomic.py): a file made in the folder, here removed at once; os.access() says
        # yes to root where the file system says no (/proc, a read-only mount)
        fd, trial = tempfile.mkstemp(dir=folder, prefix=".sdpa-tui-", suffix=".tmp")
    except OSError as exc:
        raise ValueError(f"{option} {path}: the folder {folder} is not writable ({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(trial)


def _parents(folder: str) -> list[str]:
    """``folder`` and the folders above it, nearest first."""
    found = []
    while True:
        found.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            return found
        folder = parent

