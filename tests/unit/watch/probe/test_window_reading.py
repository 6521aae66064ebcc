"""Profiler windows of ``sdpa-tui watch``, recorded on the H100 (torch 2.11, CUDA 13.0), read as the probe reads them."""

from __future__ import annotations

import statistics
import sys

import pytest
from support.paths import FIXTURES, REPO

from sdpa_tui.core.calls.call_signature import CallSignature
from sdpa_tui.core.calls.watched_calls import CallStats, Captures
from sdpa_tui.core.traces.trace import load_trace
from sdpa_tui.core.traces.window_reading import from_json, main, read_window, to_json

pytestmark = pytest.mark.torch_range

TRACES = FIXTURES / "traces" / "h100-torch2.11"
EFFICIENT = TRACES / "watch-window-efficient-16calls.json.gz"  # q[1,8,1024,256] bf16 under sdpa_kernel([EFFICIENT, MATH])
COMPILED = TRACES / "watch-window-compiled-cudnn.json.gz"  # a torch.compile'd causal block, fwd+bwd, first run in it
UNTIMED = TRACES / "watch-window-untimed.json.gz"  # exported after the next window had started


def test_each_call_in_a_window_gets_the_kernel_launched_inside_it():
    reading = read_window(load_trace(EFFICIENT)).reading
    assert [c.name for c in reading.ranged] == ["sdpa-tui#3#first"] + ["sdpa-tui#3"] * 15
    assert reading.untimed == 0 and not reading.compiled
    for call in reading.ranged:
        assert call.backend == "EFFICIENT_ATTENTION" and call.backward is None
        assert [a.name.split("(")[0] for a in call.activities] == ["fmha_cutlassF_bf16_aligned_32x128_gmem_sm80"]
    # torch.profiler on the same program gave 69.8 µs per call (docs/lab-notes/watch-truth.md)
    assert 65 < statistics.median(c.kernel_us for c in reading.ranged[1:]) < 75
    assert reading.gpu_us >= sum(c.kernel_us for c in reading.ranged)


def test_a_compiled_graphs_op_counts_once_per_run_even_nested_in_itself():
    window = read_window(load_trace(COMPILED))
    reading = window.reading
    runs = [c.run for c in reading.compiled]
    assert len(runs) == len(set(runs)) == 16, "the first run's op appears nested in itself: one call"
    assert all(c.graph == "sdpa-tui-graph#4" and c.backend == "CUDNN_ATTENTION" for c in reading.compiled)
    assert all(c.shapes[:3] == ((2, 16, 1024, 128),) * 3 and c.dtype == "c10::BFloat16" for c in reading.compiled)
    timed_backward = [c for c in reading.compiled_backward if c.activities]
    assert timed_backward and all(c.backend == "CUDNN_ATTENTION" for c in timed_backward)
    assert window.compiled_kernels and window.compiled_kernels[0].startswith("cudnn_generated_fort_native_sdpa")


def test_a_window_whose_gpu_records_came_back_untimed_gives_no_call_a_time():
    from sdpa_tui.watch.probe.kernels.profile_readings import ReadingSink

    window = read_window(load_trace(UNTIMED))
    assert window.reading.untimed > 900 and window.reading.ranged == []
    sink = ReadingSink()
    sig = CallSignature(q_shape=(2, 16, 512, 64), kv_shape=(2, 4, 512, 64), dtype="torch.bfloat16", device="cuda:0")
    entry = sink.add(CallStats(sig), cuda=True)
    captures = Captures()
    sink.apply_window(window, captures)
    assert captures.untimed == 1 and entry.profiled == 0 and entry.wanted and entry.stats.kernel_us == []


def test_a_window_that_recorded_no_gpu_work_samples_none_of_its_cuda_calls():
    """On an H200 a window whose start had torn CUPTI down recorded its 16 calls' ranges and no GPU record: those
    calls are no samples, and their signature stays wanted (a later window times it); the report counts the window."""
    from sdpa_tui.core.traces.call_profile import Activity, ProfiledCall, ProfileReading
    from sdpa_tui.core.traces.window_reading import WindowReading
    from sdpa_tui.watch.probe.kernels.profile_readings import WANTED_SAMPLES, ReadingSink

    sink = ReadingSink()
    sig = CallSignature(q_shape=(8, 16, 512, 128), kv_shape=(8, 16, 512, 128), dtype="torch.bfloat16", device="cuda:0")
    entry = sink.add(CallStats(sig), cuda=True)
    captures = Captures()
    blind = [ProfiledCall("sdpa-tui#0", "CUDNN_ATTENTION") for _ in range(2 * WANTED_SAMPLES)]
    sink.apply_window(WindowReading(ProfileReading(blind, [], [], 0.0)), captures)
    assert captures.no_gpu == 1 and entry.profiled == 0 and entry.wanted and entry.stats.kernel_us == []
    timed = [ProfiledCall("sdpa-tui#0", "CUDNN_ATTENTION", [Activity("cudnn_generated_fort_native_sdpa", 31.8)])
             for _ in range(WANTED_SAMPLES)]
    sink.apply_window(WindowReading(ProfileReading(timed, [], [], 254.4)), captures)
    assert captures.no_gpu == 1 and entry.profiled == WANTED_SAMPLES and not entry.wanted
    assert entry.stats.kernel_us == [31.8] * WANTED_SAMPLES


def test_the_helper_process_reads_a_window_as_this_process_does(capsys):
    from sdpa_tui.watch.probe.kernels import window_files

    here = read_window(load_trace(COMPILED))
    helper = window_files._read(str(COMPILED))  # python -I -c …: a separate interpreter
    assert helper == from_json(to_json(here))
    assert helper.reading.compiled == here.reading.compiled
    assert main([str(TRACES / "missing.json")]) == 2 and "not a readable JSON trace" in capsys.readouterr().err


def test_the_reader_imports_no_torch():
    import subprocess

    code = ("import sys; import sdpa_tui.core.traces.window_reading; "
            "sys.exit(1 if 'torch' in sys.modules or 'textual' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO).returncode == 0


@pytest.mark.parametrize("at_exit", [True, False])
def test_a_window_left_at_the_programs_end_is_read_in_the_process_not_a_helper(monkeypatch, tmp_path, at_exit):
    """The program has finished: a helper's start (a Python process, its imports) would only lengthen its exit. A
    block of the Python API ends with the program going on: its last window is read off the program's GIL, as every
    other window is."""
    import gzip
    import subprocess

    from sdpa_tui.watch.probe.kernels import window_files
    from sdpa_tui.watch.probe.slow_path import Probe

    spawned = []
    helper = subprocess.Popen
    monkeypatch.setattr(window_files.subprocess, "Popen", lambda *a, **k: spawned.append(a) or helper(*a, **k))
    trace = tmp_path / "window.json"
    trace.write_bytes(gzip.decompress(EFFICIENT.read_bytes()))
    probe = Probe(None)
    for _ in range(4):  # the trace's calls are entry 3's
        probe.sink.add(CallStats(CallSignature((1, 8, 1024, 256), (1, 8, 1024, 256), "torch.bfloat16", "cuda:0")),
                       cuda=True)
    probe.bursts.exported.append(str(trace))
    probe.finish(at_exit=at_exit)
    assert (len(spawned), probe.sink.readings) == (0 if at_exit else 1, 1)
    assert len(probe.entries[3].stats.kernel_us) == 15


def test_a_helper_still_reading_when_the_process_ends_is_stopped_and_its_window_read_in_the_process(monkeypatch,
                                                                                                      tmp_path):
    """A program that ends right after a window (3 steps of a decoder on an H200) waited at its exit for the helper's
    whole read, 0.2 s more than plain: the helper is stopped and the window read in the process, the same reading."""
    import gzip
    import subprocess
    import threading

    from support.waiting import wait_until

    from sdpa_tui.watch.probe.kernels import window_files

    monkeypatch.setattr(window_files, "_HELPER", "import time; time.sleep(120)")  # a helper that never finishes
    helpers = []
    popen = subprocess.Popen
    monkeypatch.setattr(window_files.subprocess, "Popen", lambda *a, **k: helpers.append(popen(*a, **k)) or helpers[-1])
    trace = tmp_path / "window.json"
    trace.write_bytes(gzip.decompress(EFFICIENT.read_bytes()))
    ending, got = threading.Event(), []
    reader = threading.Thread(target=lambda: got.append(window_files.read(str(trace), ending=ending)))
    reader.start()
    wait_until(lambda: helpers, 30, "the helper started")
    ending.set()  # the program has finished
    reader.join(60)
    assert not reader.is_alive() and got == [read_window(load_trace(EFFICIENT))]
    assert helpers[0].returncode is not None and helpers[0].returncode != 0  # stopped, not finished
    assert not trace.exists()
