"""Waits on a condition with a deadline, never a fixed sleep: a test goes on as soon as what it waits for holds, and
fails saying what it waited for when that never comes (a bound against a hang on a loaded machine, not a claim about
speed)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T | None], timeout: float, what: str, every: float = 0.1) -> T:
    """Poll ``condition`` until it returns something other than None or False, and return that; past ``timeout``
    seconds, fail with ``what``."""
    deadline = time.monotonic() + timeout
    while (value := _held(condition, deadline, timeout, what)) is None:
        time.sleep(every)
    return value


async def wait_until_async(condition: Callable[[], T | None], timeout: float, what: str,
                           pause: Callable[[float], Awaitable[object]], every: float = 0.05) -> T:
    """``wait_until`` inside an event loop: ``pause(every)`` between polls lets the loop run (a Textual pilot's
    ``pilot.pause``, or ``asyncio.sleep``)."""
    deadline = time.monotonic() + timeout
    while (value := _held(condition, deadline, timeout, what)) is None:
        await pause(every)
    return value


def _held(condition: Callable[[], T | None], deadline: float, timeout: float, what: str) -> T | None:
    """What ``condition`` returned if it holds, else None; past ``deadline``, an AssertionError naming ``what``."""
    value = condition()
    if value is not None and value is not False:
        return value
    if time.monotonic() > deadline:
        raise AssertionError(f"not within {timeout:.0f} s: {what}")
    return None
