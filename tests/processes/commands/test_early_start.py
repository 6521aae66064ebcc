"""The live monitor's engine starts before the UI is imported (``engine/host/early_start.py``): importing Textual and
building the app took the first 0.9-1.6 s of every start, and the engine, which then imports torch for seconds, was
spawned only after it. What it says before the app exists is kept and handed on in order."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

from support.paths import REPO

from sdpa_tui.engine.host.early_start import Relay


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
import sys, types
import sdpa_tui.engine.host.early_start as early

def started_early(device):
    print("textual imported:", "textual" in sys.modules, "torch imported:", "torch" in sys.modules, "device:", device)
    return "engine", "relay"

def run_app(args, workload, backends, started=None):  # stands in for the UI's: prints what it was handed
    print("run_app got:", started)
    return 0

early.can_run_live = lambda: True
early.start_engine_early = started_early
sys.modules["sdpa_tui.commands.monitor"] = types.SimpleNamespace(run_app=run_app)
from sdpa_tui.cli import main
sys.exit(main(sys.argv[1:]))
"""


def probe(*argv: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()


def test_the_live_monitor_starts_its_engine_before_textual_is_imported():
    assert probe("--device", "cpu", "--seq", "64") == [
        "textual imported: False torch imported: False device: cpu", "run_app got: ('engine', 'relay')"]


def test_with_a_metrics_port_the_engine_waits_for_the_port_to_be_bound():
    """A port in use ends the command with one line before any engine starts (tests/processes/commands/test_exporter.py)."""
    assert probe("--device", "cpu", "--seq", "64", "--metrics-port", "0") == ["run_app got: None"]
