"""The dispatch panel says when SDPA's pick is not the fastest, at 80x24 and 160x50 (Pilot).

The records replay the real H100 [1, 16, 8192, 128] bf16 causal report (see faster_data).
"""

from __future__ import annotations

import pytest
from support.faster_data import H100_8K, load, records_from
from support.ui_fakes import make_test_app, screen_text, settle, widget_text

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.workload import Workload

C, F, E, M = Backend.CUDNN, Backend.FLASH, Backend.EFFICIENT, Backend.MATH
WORKLOAD = Workload.from_dict(load(H100_8K)["workload"])


def flat(text: str) -> str:
    """Panel text without borders and line breaks, so a wrapped line reads whole."""
    return " ".join(line.strip(" │╭╮╰╯─") for line in text.splitlines())


async def show(size, priority):
    app, engine, _ = make_test_app(workload=WORKLOAD)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        engine.feed(app, records_from(H100_8K, engine.config.config_id, priority))
        await settle(pilot, until=lambda: "SDPA picks" in widget_text(app, "#dispatch"))
        return widget_text(app, "#dispatch"), screen_text(app)


@pytest.mark.parametrize("size", [(80, 24), (160, 50)])
async def test_panel_names_the_faster_backend_ratio_medians_and_how(size):
    panel, screen = await show(size, (F, C, E, M))
    text = flat(panel)
    assert "SDPA picks Flash GPU/call 976.9 µs" in " ".join(text.split())  # the pick's median
    if size == (80, 24):  # 36 columns: the short forms, whole, each on its line
        assert "│ cuDNN 2.00x faster: 489.4 µs " in panel
        assert "│ → sdpa_kernel([CUDNN_ATTENTION]) " in panel
    else:
        assert "│ ▲ faster: cuDNN 2.00x (489.4 µs vs 976.9 µs GPU/call) " in panel
        assert "│ get it: with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]): " in panel
    assert all(len(line) <= size[0] for line in screen.splitlines())


@pytest.mark.parametrize("size", [(80, 24), (160, 50)])
async def test_panel_says_nothing_more_when_the_pick_is_fastest(size):
    panel, _ = await show(size, None)
    assert "SDPA picks cuDNN" in flat(panel)
    assert "faster" not in panel and "get it" not in panel
