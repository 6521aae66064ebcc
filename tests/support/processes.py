"""The processes a test started, read from Linux's /proc: alive or gone, how a zombie ended, a process's children and
command line, the engine a UI process spawned."""

from __future__ import annotations

from pathlib import Path


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat from field 3 (state) on; None once the pid is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rsplit(")", 1)[1].split()


def alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def zombie_exit(pid: int) -> tuple[str, int] | None:
    """How a zombie not yet collected by its parent ended: ("status", n) or ("signal", n)
    (/proc stat field 52, in waitpid's form)."""
    fields = _stat(pid)
    if fields is None or fields[0] != "Z" or len(fields) < 50:
        return None
    raw = int(fields[49])
    return ("status", raw >> 8) if raw & 0x7F == 0 else ("signal", raw & 0x7F)


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.update(int(c) for c in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError):
            pass
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return ""


def engine_of(ui_pid: int) -> int | None:
    engines = [c for c in children(ui_pid) if alive(c) and "spawn_main" in cmdline(c)]
    return engines[0] if len(engines) == 1 else None
