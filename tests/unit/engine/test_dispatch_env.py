"""The environment that decides dispatch: the cuDNN library in use (and whether it shadows the wheel's), the Flash
implementation, the flags found at start and the variables; in the report's JSON and text, and the exporter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import PROGRAMS, REPO, REPORTS

from sdpa_tui.core.dispatch_environment import (
    CudnnLoaded,
    DispatchEnvironment,
    FlashImpl,
    is_shadowed,
    mapped_libraries,
    sdpa_variables,
)
from sdpa_tui.core.protocol.records import Environment

pytestmark = pytest.mark.torch_range

MAPS = """\
7f1a00000000-7f1a00020000 r--p 00000000 08:01 1234   /venv/site-packages/nvidia/cudnn/lib/libcudnn.so.9
7f1a00020000-7f1a00040000 r-xp 00020000 08:01 1234   /venv/site-packages/nvidia/cudnn/lib/libcudnn.so.9
7f1a10000000-7f1a20000000 r--p 00000000 08:01 1240   /venv/site-packages/nvidia/cudnn/lib/libcudnn_graph.so.9
7f1b00000000-7f1b00020000 r--p 00000000 08:01 9999   /usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0
7f1c00000000-7f1c00001000 rw-p 00000000 00:00 0
"""


def test_the_mapped_copies_of_cudnn_are_read_from_the_process_maps_sub_libraries_left_out():
    assert mapped_libraries(MAPS) == ["/venv/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
                                      "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0"]
    assert mapped_libraries("") == []


def test_shadowed_only_when_the_copy_in_use_is_not_the_wheels(tmp_path):
    wheel = tmp_path / "wheel" / "libcudnn.so.9"
    wheel.parent.mkdir()
    wheel.write_bytes(b"x")
    link = tmp_path / "link.so.9"
    link.symlink_to(wheel)
    other = tmp_path / "libcudnn.so.9"
    other.write_bytes(b"x")
    assert not is_shadowed(str(wheel), str(wheel))
    assert not is_shadowed(str(link), str(wheel)), "the same file by another name"
    assert is_shadowed(str(other), str(wheel))
    assert not is_shadowed(str(other), None), "no wheel installed: nothing to shadow"


def test_what_differs_from_a_plain_install_is_said_in_short():
    plain = DispatchEnvironment(CudnnLoaded("/w/libcudnn.so.9", "9.19.0", "9.19.0", "/w/libcudnn.so.9", False),
                                FlashImpl(None, ("FA3",)), {"flash": True, "math": True, "deterministic": False}, {})
    assert plain.notes() == []
    odd = DispatchEnvironment(
        CudnnLoaded("/usr/lib/libcudnn.so.9", "9.1.0", "9.19.0", "/w/libcudnn.so.9", True),
        FlashImpl("FA3", ("FA3",)), {"flash": False, "cudnn": False, "deterministic": True},
        sdpa_variables({"TORCH_CUDNN_SDPA_DEPRIORITIZED": "1", "LD_LIBRARY_PATH": "/usr/lib", "HOME": "/root"}))
    assert odd.sdpa_env == {"LD_LIBRARY_PATH": "/usr/lib", "TORCH_CUDNN_SDPA_DEPRIORITIZED": "1"}
    assert odd.notes() == [
        "cuDNN 9.1.0 in use from /usr/lib/libcudnn.so.9, not the wheel's",
        "cuDNN 9.1.0 loaded, torch built with 9.19.0",
        "Flash implementation FA3",
        "SDPA flags off: flash, cudnn",
        "deterministic algorithms",
        "set: TORCH_CUDNN_SDPA_DEPRIORITIZED=1",
    ]
    assert DispatchEnvironment.from_dict(json.loads(json.dumps(odd.to_dict()))) == odd


def test_an_environment_written_before_these_fields_still_reads():
    env = Environment.from_dict({"device": "cpu", "device_name": "x", "torch_version": "2.5.0"})
    assert env.cudnn_loaded is None and env.flash_impl is None and env.sdp_flags == {} and env.sdpa_env == {}
    assert env.dispatch_env.notes() == []


def _wheel_cudnn() -> Path | None:
    torch = pytest.importorskip("torch")
    from sdpa_tui.engine.measuring.dispatch_readings import cudnn_loaded

    found = cudnn_loaded()
    if found is None or found.wheel_path is None or torch.version.cuda is None:
        return None
    return Path(found.wheel_path)


def test_in_this_process_the_wheels_cudnn_is_in_use_and_the_flags_are_read():
    from sdpa_tui.engine.measuring.dispatch_readings import read

    env = read()
    if _wheel_cudnn() is None:
        pytest.skip("no cuDNN wheel in this torch")
    assert env.cudnn_loaded.path == env.cudnn_loaded.wheel_path and not env.cudnn_loaded.shadowed
    assert env.cudnn_loaded.version and env.cudnn_loaded.built_with
    assert set(env.sdp_flags) >= {"flash", "mem_efficient", "math", "cudnn", "deterministic"}


def test_a_preloaded_cudnn_copy_shows_as_shadowing_the_wheels_in_report(tmp_path):
    """transformers#48163: a system cuDNN shadowed the wheel's. Here a copy of the wheel's, preloaded."""
    wheel = _wheel_cudnn()
    if wheel is None:
        pytest.skip("no cuDNN wheel in this torch")
    copy = tmp_path / wheel.name
    copy.write_bytes(wheel.read_bytes())
    for sub in wheel.parent.glob("libcudnn_*"):  # the sub-libraries are loaded from beside the main one
        (tmp_path / sub.name).symlink_to(sub)
    out = tmp_path / "r.json"
    # piped with no COLUMNS (pytest-xdist's workers set it to 80): 160 columns, the long path on one line
    env = {**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "LD_PRELOAD": str(copy),
           "TORCH_CUDNN_SDPA_DEPRIORITIZED": "1"}
    proc = subprocess.run([sys.executable, "-m", "sdpa_tui", "report", "--device", "cpu", "--seq", "32",
                           "--json", str(out)], capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(out.read_text())["environment"]
    assert found["cudnn_loaded"]["path"] == str(copy) and found["cudnn_loaded"]["shadowed"] is True
    assert found["cudnn_loaded"]["wheel_path"] == str(wheel)
    assert found["sdpa_env"]["TORCH_CUDNN_SDPA_DEPRIORITIZED"] == "1"
    assert "flash" in found["sdp_flags"] and "current" in (found["flash_impl"] or {"current": None})
    assert f"cuDNN {found['cudnn_loaded']['version']} in use from {copy}, not the wheel's" in proc.stdout


def test_the_exporter_has_an_info_metric_of_it():
    from dataclasses import replace

    from prometheus_client.core import InfoMetricFamily
    from support.real_data import session_from_report

    from sdpa_tui.exports.metrics.lab_metrics import session_families

    session = session_from_report(REPORTS / "h100-torch2.11" / "report-small.json")
    session.environment = replace(
        session.environment, cudnn_loaded=CudnnLoaded("/usr/lib/libcudnn.so.9", "9.1.0", "9.19.0", "/w/libcudnn.so.9",
                                                      True), flash_impl=FlashImpl(None, ("FA3",)),
        sdp_flags={"flash": False, "math": True, "deterministic": True}, sdpa_env={"TORCH_CUDNN_SDPA_DEPRIORITIZED": "1"})
    family = next(f for f in session_families(session, "cuda") if f.name == "sdpa_tui_dispatch_environment")
    assert isinstance(family, InfoMetricFamily)
    labels = family.samples[0].labels
    assert labels["cudnn_path"] == "/usr/lib/libcudnn.so.9" and labels["cudnn_shadowed"] == "true"
    assert labels["cudnn_version"] == "9.1.0" and labels["cudnn_built_with"] == "9.19.0"
    assert labels["flash_impl"] == "default" and labels["sdp_flags_off"] == "flash" and labels["deterministic"] == "true"
    assert labels["sdpa_env"] == "TORCH_CUDNN_SDPA_DEPRIORITIZED=1"


def test_watch_reads_it_in_the_watched_process_at_start_and_says_what_the_program_changed(tmp_path):
    out = tmp_path / "calls.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), "TORCH_CUDNN_SDPA_DEPRIORITIZED": "1"}
    proc = subprocess.run([sys.executable, "-m", "sdpa_tui", "watch", "--report", str(out), "--no-advice", "--",
                           sys.executable, str(PROGRAMS / "flags_changed.py")],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=240, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    found = report["environment"]
    assert found["sdp_flags"]["flash"] is True, "as found at start, before the program's first line"
    assert found["sdpa_env"] == {"TORCH_CUDNN_SDPA_DEPRIORITIZED": "1"}
    assert "dispatch environment at start: set: TORCH_CUDNN_SDPA_DEPRIORITIZED=1" in proc.stdout
    changed = [n for n in report["notes"] if "changed the dispatch environment while it ran" in n]
    assert len(changed) == 1 and "SDPA flags off: flash" in changed[0], report["notes"]


def test_compare_lists_the_environment_differences_most_likely_cause_first():
    from sdpa_tui.exports.compare.report_diff import compare_reports, load_report
    from sdpa_tui.exports.compare.report_diff_views import comparison_dict, summary_lines

    path = REPORTS / "h100-torch2.11" / "report-small.json"
    a, b = load_report(path), load_report(path)
    same = compare_reports(a, b)
    assert same.environment == () and not any(line.startswith(("environments", "what differs"))
                                              for line in summary_lines(same))
    for doc, flash, version, deprioritized in ((a, True, "9.19.0", None), (b, False, "9.1.0", "1")):
        doc["environment"].update(
            cudnn_loaded={"path": "/w/libcudnn.so.9", "version": version, "built_with": "9.19.0",
                          "wheel_path": "/w/libcudnn.so.9", "shadowed": False},
            sdp_flags={"flash": flash, "mem_efficient": True, "math": True, "cudnn": True, "deterministic": False},
            sdpa_env={"TORCH_CUDNN_SDPA_DEPRIORITIZED": deprioritized} if deprioritized else {}, flash_impl=None)
    b["dispatch"]["choice"] = "EFFICIENT_ATTENTION"
    comparison = compare_reports(a, b)
    assert list(comparison.environment) == ["flash flag at start: on → off", "cuDNN: 9.19.0 → 9.1.0",
                                            "TORCH_CUDNN_SDPA_DEPRIORITIZED: unset → 1"]
    line = summary_lines(comparison)[-1]
    assert line.startswith("what differs in the environment (most likely cause first): flash flag at start")
    assert comparison_dict(comparison)["environment_differences"] == list(comparison.environment)
