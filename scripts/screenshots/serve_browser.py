"""Drive ``sdpa-tui serve`` from a real headless Chromium and record what the page shows.

    python3 scripts/screenshots/serve_browser.py --device cpu --json out.json --screenshot page.png

Starts ``sdpa-tui serve`` on a free loopback port, opens the page in Debian's chromium through
Playwright (``executable_path``; Playwright's own browser download is never used), waits for
live numbers, presses ``f`` (Flash flag off) and records the terminal's text at each step,
then saves a screenshot of the page.

Reading the text: textual-serve draws the terminal with xterm.js on a canvas (WebGL or 2D),
so the text is not in the DOM. xterm.js's screen-reader mode adds an accessibility tree
(``.xterm-accessibility-tree``, one DOM row per terminal row) that mirrors the screen. The
page keeps its xterm ``Terminal`` in a local variable; an init script catches it as the page
builds it (a setter for the ``webglAddon`` property that textual-serve's terminal class
assigns right after creating the ``Terminal``) so the script can switch that mode on. The text
read is then what the browser holds for a screen reader, after the websocket delivered it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("SDPA_TUI_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
CATCH_TERMINAL = """
(() => {
  window.__sdpaTerminals = [];
  Object.defineProperty(Object.prototype, 'webglAddon', {
    configurable: true,
    set(value) {
      Object.defineProperty(this, 'webglAddon', {value, writable: true, configurable: true, enumerable: true});
      if (this.terminal && this.terminal.buffer) window.__sdpaTerminals.push(this.terminal);
    },
  });
})();
"""
A11Y_ON = """() => {
  const t = window.__sdpaTerminals[0];
  if (!t) return false;
  t.options.screenReaderMode = true;
  return true;
}"""
LIVE_NUMBER = re.compile(r"eager\s+[\d.,]+\s*(?:ns|µs|ms|s)\b")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(device: str, port: int, cwd: str, extra: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    server = subprocess.Popen(
        [sys.executable, "-m", "sdpa_tui", "serve", "--device", device, "--port", str(port), *extra],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    line = server.stdout.readline()
    if "serving the monitor" not in line:
        server.kill()
        raise SystemExit(f"serve did not start: {line!r} {server.stderr.read()!r}")
    return server


def children(pid: int) -> set[int]:
    """Child processes of ``pid`` (Linux /proc; empty where that is not readable)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            pass
    return found


def wait_for_sessions_to_end(server: subprocess.Popen, timeout_s: float = 60) -> bool:
    """After the page or websocket closed, the served app (and its engine) exits: wait for it,
    so that stopping the server measures the server, not a session still shutting down."""
    deadline = time.monotonic() + timeout_s
    while children(server.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not children(server.pid)


def screen_text(page) -> str:
    tree = page.locator(".xterm-accessibility-tree")
    return tree.inner_text() if tree.count() else ""


def wait_for(page, predicate, timeout_s: float) -> tuple[bool, str]:
    """Poll the page's terminal text until ``predicate(text)``; (met, last text)."""
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        if page.evaluate(A11Y_ON):
            text = screen_text(page)
            if predicate(text):
                return True, text
        time.sleep(0.5)
    return False, text


def flash_shown_off(text: str) -> bool:
    """The Flash panel says off, the dispatch panel's flags too, and the others still measure."""
    return "○ off" in text and "flash✗" in text and bool(numbers(text))


def numbers(text: str) -> list[str]:
    return LIVE_NUMBER.findall(text)


def drive(url: str, screenshot: Path, ready_s: float) -> dict:
    from playwright.sync_api import sync_playwright

    steps: dict[str, dict] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.route("**/fonts.googleapis.com/**", lambda route: route.abort())  # the page asks; offline
            page.add_init_script(CATCH_TERMINAL)
            page.goto(url)
            t0 = time.monotonic()
            met, live = wait_for(page, lambda t: bool(numbers(t)), ready_s)
            steps["live"] = {"met": met, "seconds": round(time.monotonic() - t0, 1), "text": live}
            met, later = wait_for(page, lambda t: bool(numbers(t)) and numbers(t) != numbers(live), 60)
            steps["later"] = {"met": met, "text": later}
            page.focus(".xterm-helper-textarea")
            page.keyboard.press("f")
            met, flash_off = wait_for(page, flash_shown_off, 60)
            steps["flash_off"] = {"met": met, "text": flash_off}
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot))
        finally:
            browser.close()
    return steps


ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def websocket_only(url: str, seconds: float) -> dict:
    """Without a browser: the websocket handshake and what the served app sends, as text with
    the escape sequences taken out (no terminal emulator: split or repainted text may not
    read as one line), before and after sending ``f``."""
    import asyncio

    import aiohttp  # textual-serve's own HTTP library

    async def session() -> dict:
        steps: dict[str, dict] = {}
        async with aiohttp.ClientSession() as http, http.ws_connect(url + "ws?width=140&height=45") as ws:
            steps["handshake"] = {"met": True, "text": f"HTTP 101, websocket open at {url}ws"}
            await ws.send_json(["resize", {"width": 140, "height": 45}])

            async def read(for_s: float, predicate) -> tuple[bool, str]:
                raw, deadline = [], time.monotonic() + for_s
                while time.monotonic() < deadline:
                    try:
                        msg = await ws.receive(timeout=max(0.1, deadline - time.monotonic()))
                    except asyncio.TimeoutError:
                        break
                    if msg.type == aiohttp.WSMsgType.BINARY:
                        raw.append(msg.data.decode("utf-8", "replace"))
                    elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                        break
                    text = ANSI.sub(" ", "".join(raw))
                    if predicate(text):
                        return True, text
                return False, ANSI.sub(" ", "".join(raw))

            met, text = await read(seconds, lambda t: bool(re.search(r"[\d.]+ (?:µs|ms)", t)))
            steps["live"] = {"met": met, "text": text[-4000:]}
            await ws.send_json(["stdin", "f"])
            met, text = await read(30, lambda t: "Flash flag off" in t)
            steps["flash_off"] = {"met": met, "text": text[-4000:]}
        return steps

    return asyncio.run(session())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", type=Path, required=True, help="where to write the screens read")
    parser.add_argument("--screenshot", type=Path, help="PNG of the page after f (required unless --no-browser)")
    parser.add_argument("--no-browser", action="store_true", help="no chromium here: check the websocket only")
    parser.add_argument("--ready-seconds", type=float, default=120, help="longest wait for the first numbers")
    parser.add_argument("serve_options", nargs="*", help="more sdpa-tui serve options (after --)")
    args = parser.parse_args()
    if not args.no_browser and args.screenshot is None:
        parser.error("--screenshot is required with a browser")
    port = free_port()
    with tempfile.TemporaryDirectory() as cwd:
        server = start_server(args.device, port, cwd, args.serve_options)
        try:
            url = f"http://127.0.0.1:{port}/"
            steps = (websocket_only(url, args.ready_seconds) if args.no_browser
                     else drive(url, args.screenshot, args.ready_seconds))
        finally:
            sessions_ended = wait_for_sessions_to_end(server)
            server.terminate()
            out, err = server.communicate(timeout=60)
    result = {"url": f"http://127.0.0.1:{port}/", "device": args.device, "steps": steps,
              "sessions_ended": sessions_ended, "server_exit": server.returncode, "server_stderr": err}
    args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    for name, step in steps.items():
        print(f"--- {name}: {'seen' if step['met'] else 'NOT seen'}")
        print(step["text"])
    return 0 if all(step["met"] for step in steps.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
