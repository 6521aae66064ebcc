"""RedrawThrottle: many changes, one redraw per interval; a first number drawn at once."""

from __future__ import annotations

import time

from textual.app import App

from sdpa_tui.ui.lab.redraw_throttle import RedrawThrottle

TIMER_SKEW_S = 0.005
"""How early a Textual timer may fire against ``time.monotonic`` (2026-11-29: 65 µs early in a CI run, once more in a
local run of the unit tests on two busy cores)."""


async def wait_until_drawn(pilot, throttle: RedrawThrottle, timeout_s: float = 3.0) -> None:
    deadline = time.monotonic() + timeout_s
    while throttle.pending and time.monotonic() < deadline:
        await pilot.pause(0.02)


async def test_requests_meanwhile_make_one_redraw_and_now_draws_at_once_then_again() -> None:
    app = App()
    async with app.run_test() as pilot:
        drawn: list[float] = []
        throttle = RedrawThrottle(app, 0.2, lambda: drawn.append(time.monotonic()))
        asked = time.monotonic()
        for _ in range(50):  # a burst of samples
            throttle.request()
        assert throttle.pending and drawn == []
        await wait_until_drawn(pilot, throttle)
        assert len(drawn) == 1 and drawn[0] - asked >= 0.2 - TIMER_SKEW_S
        throttle.now()
        assert len(drawn) == 2 and throttle.pending, "drawn at once, and once more when laid out"
        await wait_until_drawn(pilot, throttle)
        assert len(drawn) == 3
