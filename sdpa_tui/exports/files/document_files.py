"""Reading back a JSON document sdpa-tui wrote (a report, or a snapshot's ``snapshot.json``).

``snapshot.read_snapshot`` and ``report_diff.load_report`` both start here, then check the
document for what they need; each says what went wrong in one line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

SNAPSHOT_JSON = "snapshot.json"
"""The document inside a snapshot directory."""


class UnreadableDocument(Exception):
    """The file gives no JSON document; ``str()`` says why in one line, ``file`` is the path tried
    and ``missing`` is True when there is no such file."""

    def __init__(self, why: str, file: Path, missing: bool = False) -> None:
        super().__init__(why)
        self.file = file
        self.missing = missing


def read_document(path: str | os.PathLike) -> tuple[Path, Any]:
    """The file read (``path``, or ``snapshot.json`` in a snapshot directory) and its JSON."""
    p = Path(path).expanduser()
    file = p / SNAPSHOT_JSON if p.is_dir() else p
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UnreadableDocument(f"{p} has no {SNAPSHOT_JSON}" if p.is_dir() else f"{file} does not exist",
                                 file, missing=True) from None
    except UnicodeDecodeError:
        raise UnreadableDocument(f"{file} is not UTF-8 text", file) from None
    except OSError as exc:
        raise UnreadableDocument(f"cannot read {file}: {exc.strerror or exc}", file) from None
    try:
        return file, json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnreadableDocument(f"{file} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
                                 file) from None
