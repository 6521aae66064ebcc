"""``sdpa-tui serve`` in a real headless Chromium (Debian's chromium, driven by Playwright):
the page shows live numbers, and ``f`` turns the Flash flag off on the page.

The driving is ``scripts/screenshots/serve_browser.py`` (also the GPU step ``serve``); this test runs it
and checks the terminal text it read from the page's accessibility tree.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser_run(tmp_path_factory) -> tuple[dict, Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("serve-browser")
    run = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "screenshots" / "serve_browser.py"), "--device", "cpu",
         "--json", str(out / "run.json"), "--screenshot", str(out / "page.png")],
        capture_output=True, text=True, timeout=400,
    )
    assert (out / "run.json").exists(), run.stderr[-3000:]
    return json.loads((out / "run.json").read_text()), out / "page.png", run


def test_the_page_shows_live_numbers(browser_run):
    result, _, run = browser_run
    live, later = result["steps"]["live"], result["steps"]["later"]
    assert live["met"], live["text"]
    assert "CPU MODE" in live["text"] and "Flash (f)" in live["text"]
    assert later["met"], "the numbers on the page did not change:\n" + later["text"]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]


def test_f_turns_flash_off_on_the_page(browser_run):
    result, _, _ = browser_run
    before, after = result["steps"]["live"]["text"], result["steps"]["flash_off"]
    assert "flash✓" in before and "○ off" not in before
    assert after["met"], after["text"]
    assert "Flash flag off" in after["text"]


def test_the_page_screenshot_and_a_clean_server_exit(browser_run):
    """Closing the browser ends its session: the app and its engine exit (the server's
    children are gone); then the server stops cleanly on SIGTERM."""
    result, png, _ = browser_run
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert result["sessions_ended"]
    assert result["server_exit"] == 0
    assert result["server_stderr"] == ""
