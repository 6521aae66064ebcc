"""The dispatch panel says only what is known, and every backend's line shows (issue 21, item 3)."""

from __future__ import annotations

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.records import BackendStatus, Dispatch, Ready
from sdpa_tui.core.workload import Workload
from sdpa_tui.ui.widgets.dispatch_panel import why_not

ORDER = [Backend.FLASH, Backend.EFFICIENT, Backend.MATH, Backend.CUDNN]
LONG = ("For dense input, both fused kernels require query, key and value to have the same num_heads. Query.sizes(): "
        "[2, 8, 576, 128], Key sizes(): [2, 2, 576, 128] instead. To broadcast dense inputs, try using unsqueeze.")


def session() -> Session:
    s = Session(Workload(dtype="fp32"))
    s.apply(Dispatch(0, Backend.FLASH, tuple(b.value for b in ORDER), ""))
    return s


def test_a_backend_not_yet_checked_is_said_to_be_checked_not_eligible():
    """For about a second at start the panel said cuDNN and Mem-efficient were 'eligible, but Flash comes
    first' before the engine had checked anything."""
    s = session()
    assert why_not(s, Backend.EFFICIENT, Backend.FLASH, ORDER) == "checking…"
    s.apply(BackendStatus(0, Backend.EFFICIENT, "ok"))
    assert why_not(s, Backend.EFFICIENT, Backend.FLASH, ORDER) == (
        "eligible, but Flash comes first in the priority order")
    s.apply(BackendStatus(0, Backend.MATH, "not_eligible", LONG))
    assert why_not(s, Backend.MATH, Backend.FLASH, ORDER) == (
        "not eligible: For dense input, both fused kernels require query, key and value to have the same num_heads.")


async def test_at_140x45_every_backends_line_shows_in_the_dispatch_panel():
    """Long reasons wrapped, and Math's line never showed: each backend gets one line, its reason cut with an
    ellipsis (the whole reason is in its own panel)."""
    from support.ui_fakes import H200, live_records, make_test_app, settle, widget_text

    app, engine, _ = make_test_app(workload=Workload(dtype="fp32"))
    async with app.run_test(size=(140, 45)) as pilot:
        cid = engine.config.config_id
        reasons = [BackendStatus(cid, b, "not_eligible", LONG, (LONG,)) for b in (Backend.CUDNN, Backend.FLASH)]
        engine.feed(app, [Ready(H200), *reasons, *live_records(cid, (Backend.EFFICIENT, Backend.MATH))])
        await settle(pilot, until=lambda: "SDPA picks" in widget_text(app, "#dispatch"))
        await settle(pilot)
        shown = widget_text(app, "#dispatch")
        for label in ("cuDNN: not eligible", "Flash: not eligible", "Math: eligible, but"):
            assert label in shown, shown
        assert "…" in shown, "a reason longer than the panel is cut with an ellipsis, not wrapped"
