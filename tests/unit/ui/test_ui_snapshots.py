"""SVG snapshots of the live screen at a narrow (80x24) and a wide (160x50) terminal.

The data is fed by the fake engine from real H200 traces; the clock in the status line is
frozen, and every sample carries a fixed time, so the screens are the same on every run.
Update the baselines with ``pytest tests/unit/ui/test_ui_snapshots.py --snapshot-update`` and look
at them before committing.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from support.ui_fakes import make_test_app, settle, widget_text

from sdpa_tui.core.backends import Backend
from sdpa_tui.ui.widgets import status_line

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 50), id="160x50")]


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The status line shows HH:MM:SS: freeze it (only as the status line sees ``time``)."""
    frozen = SimpleNamespace(**{name: getattr(time, name) for name in dir(time) if not name.startswith("_")})
    frozen.strftime = lambda fmt, *args: time.strftime(fmt, time.gmtime(1_790_857_026))
    monkeypatch.setattr(status_line, "time", frozen)


async def _fed_and_drawn(pilot, engine, until=lambda: True) -> None:
    """Feed a full set of records and wait for the redraw that shows them (one redraw draws all)."""
    app = pilot.app
    engine.feed_live(app)
    await settle(pilot, until=lambda: "SDPA picks" in widget_text(app, "#dispatch") and until())
    await settle(pilot)


@pytest.mark.parametrize("size", SIZES)
def test_live_view(snap_compare, size: tuple[int, int]) -> None:
    app, engine, _ = make_test_app()

    async def run_before(pilot) -> None:
        await _fed_and_drawn(pilot, engine)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_flash_flag_off(snap_compare, size: tuple[int, int]) -> None:
    app, engine, _ = make_test_app()

    async def run_before(pilot) -> None:
        await _fed_and_drawn(pilot, engine)
        await pilot.press("f")
        assert Backend.FLASH not in engine.config.enabled
        # the engine answers for the new flag set
        await _fed_and_drawn(pilot, engine, until=lambda: app.query_one("#panel-flash").has_class("-off"))

    assert snap_compare(app, terminal_size=size, run_before=run_before)


FP32_REASON = ("Expected query, key and value to all be of dtype: {Half, BFloat16}. Got Query dtype: float, "
               "Key dtype: float, and Value dtype: float instead.")  # torch 2.11 on the H100 (fixtures/reports)


@pytest.mark.parametrize("size", SIZES)
def test_not_eligible_reasons(snap_compare, size: tuple[int, int]) -> None:
    """fp32: cuDNN and Flash cannot run; each says why once, wrapped in whole words."""
    from support.ui_fakes import H200, live_records

    from sdpa_tui.core.protocol.records import BackendStatus, Ready
    from sdpa_tui.core.workload import Workload

    app, engine, _ = make_test_app(workload=Workload(dtype="fp32"))

    async def run_before(pilot) -> None:
        cid = engine.config.config_id
        reasons = [BackendStatus(cid, b, "not_eligible", FP32_REASON,
                                 (FP32_REASON, "No available kernel. Aborting execution."))
                   for b in (Backend.CUDNN, Backend.FLASH)]
        engine.feed(app, [Ready(H200), *reasons, *live_records(cid, (Backend.EFFICIENT, Backend.MATH))])
        await settle(pilot, until=lambda: "SDPA picks" in widget_text(app, "#dispatch")
                     and "not eligible" in widget_text(app, "#panel-flash"))
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
