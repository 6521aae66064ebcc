"""The trainers' callbacks: a tiny transformers Trainer run (a Llama from a config, a few steps) and a tiny Lightning
run, each watched by its callback and by ``sdpa-tui watch --report`` (the same script, at the same time): the same
calls, the same losses and weights, the numbers logged at each logging step, and the JSON read by ``compare``.
Skipped where transformers or Lightning is not installed (the test extra brings both)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.paths import PROGRAMS, REPO

pytestmark = pytest.mark.torch_range

ROOT = REPO
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
FIELDS = ("calls", "nonfinite_gradients", "nonfinite_outputs", "time_us")


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=400, cwd=ROOT, env=ENV,
                          stdin=subprocess.DEVNULL)


def both_ways(tmp_path: Path, program: str) -> tuple[subprocess.CompletedProcess, dict, subprocess.CompletedProcess,
                                                     dict]:
    """``program`` under ``watch --report`` and with its callback, at the same time (two cores)."""
    found: dict[str, subprocess.CompletedProcess] = {}
    command = threading.Thread(target=lambda: found.setdefault("command", run(
        "-m", "sdpa_tui", "watch", "--report", str(tmp_path / "command.json"), "--no-advice", "--", sys.executable,
        str(PROGRAMS / program))))
    command.start()
    found["callback"] = run(str(PROGRAMS / program), "--callback", str(tmp_path / "callback.json"))
    command.join()
    for proc in found.values():
        assert proc.returncode == 0, proc.stderr[-3000:]
    return (found["command"], json.loads((tmp_path / "command.json").read_text()), found["callback"],
            json.loads((tmp_path / "callback.json").read_text()))


def line(proc: subprocess.CompletedProcess, word: str) -> str:
    """The program's line that starts with ``word`` (the Trainer prints its logs too)."""
    (found,) = [text for text in proc.stdout.splitlines() if text.startswith(word + " ")]
    return found.removeprefix(word + " ")


def counts(report: dict) -> dict[tuple, int]:
    return {(c["site"], tuple(c["q_shape"]), tuple(c["kv_shape"]), c["mask"]["kind"], c["causal"], c["grad"]):
            c["count"] for c in report["calls"]}


def compared(tmp_path: Path) -> list[dict]:
    """``compare`` on the two reports: their calls paired. The two programs ran at once on a 2-core machine, so their
    host times are not comparable (one program's calls beside the other's start read 60 µs to 6.8 ms on the VM,
    torch's threads waiting for a core): compare may call a site slower (exit 1), and says so in its JSON."""
    proc = run("-m", "sdpa_tui", "compare", str(tmp_path / "command.json"), str(tmp_path / "callback.json"), "--json")
    assert proc.returncode in (0, 1), f"compare exited {proc.returncode}: {proc.stderr}{proc.stdout}{reports(tmp_path)}"
    result = json.loads(proc.stdout)
    assert result["regressed"] == (proc.returncode == 1)
    assert not any(c["check_failed"] for c in result["calls"]), reports(tmp_path)
    return result["calls"]


def reports(tmp_path: Path) -> str:
    """Both reports' calls as the comparison read them (clock medians and checks): a failed comparison says why."""
    out = []
    for name in ("command", "callback"):
        for call in json.loads((tmp_path / f"{name}.json").read_text())["calls"]:
            out.append(f"\n{name}: {call['site']} count {call['count']} host_us {call.get('host_us')} "
                       f"kernel_us {call.get('kernel_us')} check {json.dumps(call.get('check'))}")
    return "".join(out)


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers is not installed")
def test_a_trainer_run_with_the_callback_counts_what_watch_counts_and_logs_each_logging_step(tmp_path):
    command, by_command, callback, by_callback = both_ways(tmp_path, "hf_trainer.py")
    assert line(callback, "losses") == line(command, "losses"), "the same losses and weights"
    assert counts(by_callback) == counts(by_command) and sum(counts(by_command).values()) == 2 * 4  # two layers, four steps
    (grad,) = by_callback["calls"]
    assert grad["grad"] and grad["gqa"] and grad["module"].startswith("LlamaForCausalLM:model.layers.")
    logged = json.loads(line(callback, "logged"))
    name = "sdpa/q[4,8,16,8] kv[4,2,16,8] fp32 causal gqa grad"
    assert logged == [[f"{name}/{field}" for field in FIELDS]] * 3, "steps 2 and 4, and the run's end"
    assert [(c["count"], c["check"]) for c in compared(tmp_path)] == [([8, 8], ["ok", "ok"])]


@pytest.mark.skipif(importlib.util.find_spec("lightning") is None, reason="Lightning is not installed")
def test_a_lightning_run_with_the_callback_counts_what_watch_counts_and_logs_to_its_logger(tmp_path):
    command, by_command, callback, by_callback = both_ways(tmp_path, "lightning_fit.py")
    assert line(callback, "losses") == line(command, "losses"), "the same losses and weights"
    assert counts(by_callback) == counts(by_command) and sum(counts(by_command).values()) == 4
    columns = json.loads(line(callback, "logged"))
    assert columns == [f"sdpa/qkv[4,4,16,8] fp32 causal grad/{field}" for field in FIELDS], "in the CSV logger's file"
    assert by_callback["program"] == ["Lightning Trainer.fit()"] and by_callback["exit_code"] == 0
    assert [(c["count"], c["check"]) for c in compared(tmp_path)] == [([4, 4], ["ok", "ok"])]
