"""What a benchmark writes down about how it was run, with no machine paths in it."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import sys
from pathlib import Path


def command_line(argv: list[str] | None = None) -> list[str]:
    """The script's name and its arguments; an absolute path keeps only its file name.

    Results are committed, and where this machine keeps its files says nothing about the run.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    return [Path(sys.argv[0]).name, *(_without_directories(a) for a in args)]


def _without_directories(arg: str) -> str:
    flag, eq, value = arg.rpartition("=") if arg.startswith("--") and "=" in arg else ("", "", arg)
    if Path(value).is_absolute():
        value = Path(value).name
    return f"{flag}{eq}{value}"


def run_header(started: dt.datetime, argv: list[str] | None, device: str) -> dict:
    """The fields every benchmark result starts with: when, where (the host's name, no path),
    how it was run, and on which device."""
    return {
        "date": started.isoformat(timespec="seconds"),
        "host": platform.node(),
        "command": command_line(argv),
        "python": platform.python_version(),
        "device": device,
    }


def load_average() -> list[float]:
    """The machine's load average over 1, 5 and 15 minutes, now."""
    return [round(x, 2) for x in os.getloadavg()]


def write_result(result: dict, path: "str | Path | None", default_name: str) -> Path:
    """Write ``result`` as JSON to ``path``, or to benchmarks/results/``default_name``; say where."""
    out = Path(path) if path else Path(__file__).resolve().parent / "results" / default_name
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return out
