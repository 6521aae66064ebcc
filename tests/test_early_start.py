"""The live monitor's engine starts before the UI is imported (``engine/early_start.py``): importing Textual and
building the app took the first 0.9-1.6 s of every start, and the engine, which then imports torch for seconds, was
spawned only after it. What it says before the app exists is kept and handed on in order."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from sdpa_tui.engine.early_start import Relay

REPO = Path(__file__).resolve().parents[1]


def test_what_the_engine_says_before_the_app_connects_is_handed_on_first_and_in_order():
    relay = Relay()
    relay.event("starting")
    relay.records(["ready"])
    relay.event("slow")
    got: list[tuple[str, object]] = []
    relay.connect(lambda records: got.append(("records", records)), lambda event: got.append(("event", event)))
    assert got == [("event", "starting"), ("records", ["ready"]), ("event", "slow")]
    relay.records(["sample"])
    assert got[-1] == ("records", ["sample"]) and len(got) == 4


def test_records_from_another_thread_while_connecting_keep_their_order():
    relay = Relay()
    got: list[int] = []
    sender = threading.Thread(target=lambda: [relay.records([i]) for i in range(2000)])
    sender.start()
    relay.connect(lambda records: got.extend(records), lambda event: None)
    sender.join()
    assert got == list(range(2000))


PROBE = """
import sys
import sdpa_tui.engine.early_start as early

def started_early(device):
    print("textual imported:", "textual" in sys.modules, "torch imported:", "torch" in sys.modules, "device:", device)
    raise SystemExit(0)

early.can_run_live = lambda: True
early.start_engine_early = started_early
from sdpa_tui.cli import main
main(["--device", "cpu", "--seq", "64"])
"""


def test_the_live_monitor_starts_its_engine_before_textual_is_imported():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "textual imported: False torch imported: False device: cpu"
