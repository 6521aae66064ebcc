"""A backend's status at a workload: what the engine says of it and what every view and export shows.

A ``StrEnum``: each member is its string, the value the records carry and the JSON writes ("ok", "not_eligible"...),
so files written before it read the same.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    WAITING = "waiting"  # no verdict from the engine yet at this workload
    OK = "ok"  # measured
    NOT_ELIGIBLE = "not_eligible"  # torch refuses the backend at this workload (the reason says why)
    ERROR = "error"  # it raised
    OOM = "oom"  # out of memory, or would not fit and was not launched
    DISABLED = "disabled"  # its flag is off


PROBLEMS = (Status.NOT_ELIGIBLE, Status.ERROR, Status.OOM)
"""The statuses that are a verdict against the backend (shown in red, a sweep's failure)."""
