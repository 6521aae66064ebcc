"""``sdpa-tui watch`` on a distributed job (CPU, gloo): every rank is watched, rows say which ranks made them.

The ranks are fresh interpreters (torchrun's workers, ``torch.multiprocessing.spawn`` children): the
start-up hook on their ``PYTHONPATH`` watches them (``sdpa_tui/watch/probe/startup.py``).
"""

from __future__ import annotations

import shutil
import sys

import pytest
from support.paths import PROGRAMS, REPO
from support.watching import watch

pytestmark = pytest.mark.torch_range

pytest.importorskip("torch.distributed")
TORCHRUN = (sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--standalone")


def rows(report: dict) -> dict[tuple, dict]:
    return {(tuple(c["q_shape"]), tuple(c["kv_shape"])): c for c in report["calls"]}


def test_every_rank_of_a_torchrun_job_is_watched_and_rows_say_which_ranks(tmp_path):
    proc, report = watch(tmp_path, *TORCHRUN, str(PROGRAMS / "ranks.py"), columns=200)
    assert proc.returncode == 0, proc.stderr
    assert "rank 0 done" in proc.stdout and "rank 1 done" in proc.stdout  # the ranks' lines may interleave
    by_shape = rows(report)
    assert set(by_shape) == {((1, 2, 16, 8), (1, 2, 16, 8)), ((1, 2, 16, 8), (1, 2, 32, 8))}, \
        "the launcher makes no call and adds no row"
    both = by_shape[(1, 2, 16, 8), (1, 2, 16, 8)]
    assert both["ranks"] == [0, 1] and both["count"] == 3 + 5
    assert {r: c["count"] for r, c in both["per_rank"].items()} == {"0": 3, "1": 5}
    assert all(c["backend"] == "FLASH_ATTENTION" and c["devices"] == ["cpu"] for c in both["per_rank"].values())
    assert len(both["pids"]) == 2 and both["rank_note"] is None
    only_one = by_shape[(1, 2, 16, 8), (1, 2, 32, 8)]
    assert only_one["ranks"] == [1] and only_one["count"] == 2
    header = next(line for line in proc.stdout.splitlines() if line.startswith("#  site"))
    assert "ranks" in header.split(), "the table gets a ranks column"


def test_spawned_ranks_are_watched_with_the_rank_torch_distributed_gives(tmp_path):
    proc, report = watch(tmp_path, sys.executable, str(PROGRAMS / "spawned.py"), str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    [row] = report["calls"]
    assert row["ranks"] == [0, 1] and row["count"] == 2 + 3
    assert {r: c["count"] for r, c in row["per_rank"].items()} == {"0": 2, "1": 3}


def test_a_rank_that_raises_leaves_a_complete_report_and_the_jobs_exit_code(tmp_path):
    proc, report = watch(tmp_path, *TORCHRUN, str(PROGRAMS / "ranks.py"), "--crash-rank", "1")
    assert proc.returncode == 1 and report["exit_code"] == 1
    both = rows(report)[(1, 2, 16, 8), (1, 2, 16, 8)]
    assert {r: c["count"] for r, c in both["per_rank"].items()} == {"0": 3, "1": 5}, \
        "the failing rank's calls and those of the rank torchrun ended with SIGTERM"
    assert "RuntimeError: rank 1 fails on purpose" in report["error"], "the first-hand failure is the error"
    assert any(n.startswith("rank 0 (pid") and "SIGTERM" in n for n in report["notes"])


@pytest.mark.cuda
def test_a_torchrun_job_on_gpus_gives_each_ranks_device_kernels_and_torchs_reasons(tmp_path):
    import torch

    proc, report = watch(tmp_path, *TORCHRUN, str(PROGRAMS / "ranks.py"), "--device", "cuda")
    assert proc.returncode == 0, proc.stderr
    both = rows(report)[(1, 2, 16, 8), (1, 2, 16, 8)]
    assert both["ranks"] == [0, 1] and both["count"] == 200 + 300
    gpus = torch.cuda.device_count()
    assert {r: c["devices"] for r, c in both["per_rank"].items()} == {"0": ["cuda:0"], "1": [f"cuda:{1 % gpus}"]}
    assert all(c["kernel_us"]["n"] > 0 and c["kernel_us"]["median"] > 0 for c in both["per_rank"].values())
    # fp32 keeps cuDNN and Flash out; a rank's c10 log lines start "[rank0]:", which once hid torch's reason and
    # left it on the program's stderr (two H200s, 2026-11-26)
    assert all("no reason" not in why and why for why in both["why_not"].values()), both["why_not"]
    assert "dtype" in both["why_not"]["FLASH_ATTENTION"]
    assert "Expected query, key and value" not in proc.stderr


@pytest.mark.skipif(shutil.which("torchrun") is None, reason="no torchrun on PATH")
def test_torchrun_itself_as_the_command(tmp_path):
    proc, report = watch(tmp_path, "torchrun", "--nproc_per_node", "2", "--standalone", str(PROGRAMS / "ranks.py"))
    assert proc.returncode == 0, proc.stderr
    assert rows(report)[(1, 2, 16, 8), (1, 2, 16, 8)]["ranks"] == [0, 1]


def test_a_command_that_is_not_there_is_bad_input(tmp_path):
    proc, report = watch(tmp_path, "no-such-launcher-here", "x.py")
    assert proc.returncode == 2 and not report
    assert "no-such-launcher-here: command not found" in proc.stderr


def test_a_rank_on_another_backend_or_off_the_others_time_is_flagged():
    from sdpa_tui.core.calls.call_signature import CallSignature
    from sdpa_tui.core.calls.watch_report import merge
    from sdpa_tui.core.calls.watched_calls import CallStats, ProcessState

    def state(rank: int, backend: str, us: float) -> ProcessState:
        sig = CallSignature(q_shape=(2, 8, 512, 64), kv_shape=(2, 8, 512, 64), dtype="torch.bfloat16",
                            device=f"cuda:{rank}")
        return ProcessState(pid=100 + rank, rank=rank, calls=[
            CallStats(sig, count=10, backend=backend, kernel_us=[us] * 8)])

    [row] = merge([state(0, "CUDNN_ATTENTION", 30.0), state(1, "CUDNN_ATTENTION", 31.0),
                   state(2, "CUDNN_ATTENTION", 30.5)])
    assert row.ranks == (0, 1, 2) and row.count == 30 and row.signature.device == "cuda", "one row for every GPU"
    assert row.per_rank[1].devices == ("cuda:1",) and row.rank_note == ""
    [row] = merge([state(0, "CUDNN_ATTENTION", 30.0), state(1, "CUDNN_ATTENTION", 45.0),
                   state(2, "FLASH_ATTENTION", 30.5)])
    assert "rank 2 ran FLASH_ATTENTION (the others CUDNN_ATTENTION)" in row.rank_note
    assert "rank 1 45.0 µs" in row.rank_note and "rank 0" not in row.rank_note.split(":")[-1]


def samples(families: dict, name: str) -> list:
    """A scraped family's samples (a text exposition names info families ``…_info`` gauges)."""
    family = families.get(name)
    return list(family.samples) if family is not None else []


def test_metrics_of_a_running_job_for_prometheus(tmp_path):
    """``--metrics-port 0``: the endpoint is named on stderr at start, and while the program runs a scrape
    has its signatures as bounded ids, its calls per rank, the backend as info, and the shapes only in
    the signature's info series."""
    import os
    import re
    import subprocess
    import time
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families
    from support.watching import ENV

    proc = subprocess.Popen(
        [sys.executable, "-m", "sdpa_tui", "watch", "--report", str(tmp_path / "calls.json"), "--metrics-port", "0",
         "--no-advice", "--", sys.executable, str(PROGRAMS / "steady.py"), "6"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**ENV, "OMP_NUM_THREADS": "1"}, cwd=REPO,
        stdin=subprocess.DEVNULL)
    try:
        url = re.search(r"metrics on (http://\S+)", proc.stderr.readline()).group(1)
        families: dict = {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not samples(families, "sdpa_tui_watch_calls"):
            time.sleep(0.5)
            text = urllib.request.urlopen(url, timeout=5).read().decode()
            families = {f.name: f for f in text_string_to_metric_families(text)}
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    calls = samples(families, "sdpa_tui_watch_calls")
    assert calls and all(re.fullmatch(r"[0-9a-f]{12}", s.labels["sig"]) and s.labels["rank"] == "" for s in calls)
    assert all(s.labels["host"] == os.uname().nodename and "steady.py" in s.labels["program"] for s in calls)
    info = samples(families, "sdpa_tui_watch_signature_info")
    assert {s.labels["sig"] for s in info} >= {s.labels["sig"] for s in calls}
    assert all(s.labels["q_shape"].startswith("[2, 8,") and s.labels["dtype"] == "torch.float32" for s in info)
    assert all("[" not in v for s in calls for k, v in s.labels.items() if k != "program"), "no shapes in labels"
    assert {s.labels["backend"] for s in samples(families, "sdpa_tui_watch_backend_info")} == {"FLASH_ATTENTION"}


def test_a_metrics_port_in_use_is_bad_input_before_the_program_runs(tmp_path):
    import socket
    import subprocess

    from support.watching import ENV

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        marker = tmp_path / "ran"
        script = tmp_path / "touch.py"
        script.write_text(f"open({str(marker)!r}, 'w')\n")
        proc = subprocess.run(
            [sys.executable, "-m", "sdpa_tui", "watch", "--report", str(tmp_path / "calls.json"), "--metrics-port",
             str(port), "--", sys.executable, str(script)],
            capture_output=True, text=True, env=ENV, cwd=REPO, timeout=60)
    assert proc.returncode == 2 and "choose another port" in proc.stderr and not marker.exists()
