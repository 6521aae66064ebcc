"""EngineNews without a screen: the engine's records and its supervisor's events, worded for the lab's header and
status line (real H200 records from ui_fakes)."""

from __future__ import annotations

from support.ui_fakes import H200, live_records

from sdpa_tui.core.backends import ALL_BACKENDS, Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.engine_events import EngineDied, EngineRecycled, EngineStarting
from sdpa_tui.core.protocol.records import EngineError, Ready
from sdpa_tui.core.workload import Workload
from sdpa_tui.ui.lab.engine_news import EngineNews, StatusLine


def news_of_a_session() -> tuple[EngineNews, Session]:
    session = Session(Workload(), ALL_BACKENDS)
    return EngineNews(lambda: session), session


def test_ready_clears_the_engine_line_and_first_numbers_are_drawn_once() -> None:
    news, session = news_of_a_session()
    ready = news.records([Ready(H200)])
    assert ready.engine_state == "" and ready.statuses == [StatusLine("engine ready on NVIDIA H200")]
    assert not ready.first_numbers
    first = news.records(live_records(session.config_id, (Backend.FLASH,), count=2))
    assert first.first_numbers and first.session_changed
    again = news.records(live_records(session.config_id, (Backend.FLASH,), count=2))
    assert not again.first_numbers and again.session_changed, "Flash's first number was drawn already"
    session.next_config_id()  # a key: the next configuration's first numbers are drawn at once again
    assert news.records(live_records(session.config_id, (Backend.FLASH,), count=1)).first_numbers


def test_a_recycled_engine_is_named_when_the_fresh_one_is_ready() -> None:
    news, _ = news_of_a_session()
    recycled = news.event(EngineRecycled(1234.0))
    assert recycled.engine_state == "restarting the engine to give host memory back"
    assert "grew 1,234 MiB" in recycled.statuses[0].text
    ready = news.records([Ready(H200)])
    assert ready.statuses[0].text.startswith("fresh engine ready on NVIDIA H200: the last one had grown 1,234 MiB")


def test_deaths_and_errors_are_said_once_as_errors() -> None:
    news, _ = news_of_a_session()
    assert news.event(EngineStarting(1)).engine_state is None, "the first start keeps the starting line"
    assert news.event(EngineStarting(2)).engine_state == "restarting the engine (attempt 2)"
    died = news.event(EngineDied(-9, "killed", None))
    assert died.engine_state.startswith("engine stopped") and died.statuses[0].error
    assert news.records([EngineError("out of memory")]).statuses == [StatusLine("out of memory", error=True)]
    assert news.records([EngineError("out of memory")]).statuses == [], "the same error is not said twice"
