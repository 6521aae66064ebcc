"""``sdpa-tui watch`` on the CPU: real programs run watched, their reports and outputs checked."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from support.paths import FIXTURES, PROGRAMS, REPO
from support.processes import alive
from support.waiting import wait_until
from support.watching import ENV, plain, watch

from sdpa_tui.core.calls.call_signature import CallSignature
from sdpa_tui.core.calls.watch_lab import lab_workload
from sdpa_tui.core.calls.watch_report import build_report
from sdpa_tui.core.calls.watched_calls import CallStats, ProcessState

pytestmark = pytest.mark.torch_range



@pytest.fixture(scope="module")
def shapes_watched(tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict]:
    """shapes.py run once under ``watch --report`` for the tests that read its report or its output."""
    return watch(tmp_path_factory.mktemp("shapes"), sys.executable, str(PROGRAMS / "shapes.py"))


@pytest.fixture(scope="module")
def shapes_output() -> str:
    """What shapes.py prints run plainly, without watch."""
    return plain(sys.executable, str(PROGRAMS / "shapes.py"))


def test_shapes_report_names_backend_and_reasons(shapes_watched):
    proc, report = shapes_watched
    assert proc.returncode == 0, proc.stderr
    assert report["schema_version"] == 2 and report["exit_code"] == 0
    calls = report["calls"]
    by = {(tuple(c["kv_shape"]), c["mask"]["kind"], c["causal"], c["dropout_p"], tuple(c["flags"])): c for c in calls}
    assert len(calls) == 5
    gqa = next(c for c in calls if c["gqa"])
    assert gqa["count"] == 5 and gqa["kv_shape"] == [2, 2, 16, 32] and gqa["backend"] == "FLASH_ATTENTION"
    assert gqa["site"].endswith("shapes.py:17") and gqa["kernel_us"]["n"] == 0 and gqa["kernels"] == []
    assert gqa["host_us"]["n"] == 4 and gqa["first_call_us"] > 0  # calls 2-5 timed; the first apart
    assert gqa["compiled"] is False and gqa["count_exact"] is True and gqa["backward"] is None
    assert "no CPU implementation" in gqa["why_not"]["CUDNN_ATTENTION"]
    dropout = next(c for c in calls if c["dropout_p"] == 0.5)
    assert dropout["backend"] == "MATH" and "dropout" in dropout["why_not"]["FLASH_ATTENTION"]
    forced = next(c for c in calls if c["flags"] == ["MATH"])
    assert forced["count"] == 2 and forced["backend"] == "MATH"
    assert "flag is off" in forced["why_not"]["FLASH_ATTENTION"]
    assert {c["mask"]["kind"] for c in calls} == {"none", "bool", "float"}
    assert sum(c["share"] or 0.0 for c in calls) == pytest.approx(1.0)
    assert dropout["count"] == 1 and dropout["share"] is None  # its only call is the first: no sample
    assert report["kernels_note"] == "no GPU kernels on the CPU"
    assert len(by) == 5


def test_outputs_bitwise_identical_with_and_without_watch(shapes_watched, shapes_output):
    proc, _ = shapes_watched
    assert proc.stdout.splitlines()[0] == shapes_output.strip()


def test_transformers_llama_and_gpt2_watched_bitwise_identical(tmp_path):
    pytest.importorskip("transformers")
    program = (sys.executable, str(PROGRAMS / "hf_models.py"))
    proc, report = watch(tmp_path, *program)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == plain(*program).strip()
    calls = report["calls"]
    llama_gqa = [c for c in calls if c["gqa"] and c["causal"]]
    assert llama_gqa and llama_gqa[0]["module"].startswith("LlamaForCausalLM:model.layers.")
    assert any(c["grad"] for c in calls), "the training steps record autograd"
    padded = [c for c in calls if c["mask"]["kind"] == "bool"]
    assert padded and not padded[0]["causal"], "a padded batch sends a mask, not is_causal"
    assert any(c["module"] and c["module"].startswith("GPT2LMHeadModel:") for c in calls)
    assert all("site" in c and c["backend"] for c in calls)


def test_threads_dataloader_multiprocessing_fork_keep_working(tmp_path):
    proc, report = watch(tmp_path, sys.executable, str(PROGRAMS / "concurrency.py"))
    assert proc.returncode == 0, proc.stderr
    assert "ok threads=4 batches=4 pool=3 fork=1" in proc.stdout
    assert sum(c["count"] for c in report["calls"]) >= 4 + 4  # the threads' and the loader's calls


def test_crash_keeps_calls_traceback_and_exit_code(tmp_path):
    proc, report = watch(tmp_path, sys.executable, str(PROGRAMS / "crash.py"))
    assert proc.returncode == 1
    assert report["exit_code"] == 1
    assert report["calls"][0]["count"] == 2
    assert "crashed on purpose" in report["error"] and "crash.py" in report["error"]
    assert "crashed on purpose" in proc.stderr  # the program's own stderr stays its own
    # the summary prints the traceback as written: "[b, kv_idx]" once vanished as a Rich style tag
    assert "the program raised:" in proc.stdout and "crashed on purpose at key_keep[b, kv_idx]" in proc.stdout


def lines_until(stream, done, timeout_s: float = 120.0) -> list[str]:
    """The lines of ``stream`` up to the first for which ``done`` holds; fails, with the lines seen, when the stream
    ends first or ``timeout_s`` passes (a deadline against a hang, not a claim about speed)."""
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"no such line within {timeout_s:.0f} s; the lines seen: {seen}") from None
        if line is None:
            raise AssertionError(f"the stream ended first; the lines seen: {seen}")
        seen.append(line)
        if done(line):
            return seen


def test_sigint_stops_program_and_its_children(tmp_path):
    report = tmp_path / "calls.json"
    parent = subprocess.Popen(
        [sys.executable, "-m", "sdpa_tui", "watch", "--report", str(report), "--no-advice", "--", sys.executable,
         str(PROGRAMS / "sleeper.py")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=REPO, stdin=subprocess.DEVNULL,
    )
    seen = lines_until(parent.stdout, lambda line: line.strip() == "ready")
    child_pid = next((int(line.split()[1]) for line in seen if line.startswith("child ")), None)
    parent.send_signal(signal.SIGINT)
    parent.wait(60)
    assert child_pid is not None
    wait_until(lambda: not alive(child_pid), 10, f"the program's child {child_pid} gone")
    data = json.loads(report.read_text())
    assert data["calls"][0]["count"] == 1 and "stopped by Ctrl+C" in data["notes"]


def test_a_command_that_is_not_python_runs_as_a_launcher_and_makes_no_row(tmp_path):
    """``watch -- torchrun …`` or a shell script: the command runs, its Python processes are watched."""
    proc, report = watch(tmp_path, "true")
    assert proc.returncode == 0 and report["calls"] == [] and report["exit_code"] == 0
    assert "no SDPA call was seen" in proc.stdout


def test_rows_merge_processes_and_share_time():
    sig = CallSignature((2, 8, 64, 32), (2, 2, 64, 32), "torch.bfloat16", "cuda:0", causal=True, gqa=True)
    other = CallSignature((2, 8, 1, 32), (2, 2, 64, 32), "torch.bfloat16", "cuda:0", gqa=True)
    states = [
        ProcessState(1, [CallStats(sig, count=30, kernel_us=[10.0, 12.0, 11.0], modules=["M:layers.0.attn"]),
                         CallStats(other, count=10, kernel_us=[30.0])]),
        ProcessState(2, [CallStats(sig, count=10, kernel_us=[11.0], modules=["M:layers.1.attn"])]),
    ]
    report = build_report(["x.py"], 0, [ProcessState.from_dict(s.to_dict()) for s in states], 4.0).to_dict()
    first, second = report["calls"]
    assert first["count"] == 40 and first["pids"] == [1, 2] and first["kernel_us"]["median"] == 11.0
    assert first["kernel_us"]["n"] == 4 and first["modules"] == ["M:layers.{0..1}.attn"]
    assert first["share"] == pytest.approx(440 / 740) and first["calls_per_s"] == 10.0
    assert second["share"] == pytest.approx(300 / 740)


def test_lab_workload_from_a_call():
    sig = CallSignature((2, 8, 128, 64), (2, 2, 128, 64), "torch.float16", "cuda:0", mask="bool",
                        mask_shape=(2, 1, 128, 128), gqa=True, grad=True)
    workload, differences = lab_workload(sig)
    assert (workload.heads, workload.kv_heads, workload.mask, workload.direction) == (8, 2, "padding", "fwd+bwd")
    assert differences and "bool mask" in differences[0]


def test_flag_changes_in_a_loop_reuse_their_signature(tmp_path):
    proc, report = watch(tmp_path, sys.executable, str(PROGRAMS / "flag_loop.py"))
    assert proc.returncode == 0, proc.stderr
    calls = report["calls"]
    assert sorted(c["count"] for c in calls) == [1, 3, 3, 3], [(c["flags"], c["priority"], c["count"]) for c in calls]
    by_line = {int(c["site"].rsplit(":", 1)[1]): c for c in calls}
    assert by_line[10]["flags"] == ["FLASH_ATTENTION", "MATH"] and by_line[10]["priority"][:2] == ["MATH", "FLASH_ATTENTION"]
    assert "no priority order" in by_line[10]["why_not"]["MATH"]  # the CPU takes its flash kernel first
    assert by_line[12]["flags"] == ["MATH"] and by_line[12]["backend"] == "MATH" and by_line[12]["count"] == 3
    assert by_line[13]["count"] == 3 and by_line[13]["priority"][0] == "FLASH_ATTENTION"
    assert by_line[15]["count"] == 1 and "flag is off" in by_line[15]["why_not"]["MATH"]


def test_kernels_in_ranges_of_a_real_h100_trace():
    from sdpa_tui.core.traces.trace import kernels_in_ranges, load_trace

    trace = load_trace(FIXTURES / "traces" / "h100-torch2.11" / "CUDNN_ATTENTION_fwd_bwd_2calls.json")
    found = kernels_in_ranges(trace, "sdpa_tui.")
    assert list(found) == ["sdpa_tui.call"]
    assert any(k.startswith("cudnn_generated_fort_native_sdpa_sm90_flash_fprop") for k in found["sdpa_tui.call"])
    assert len(found["sdpa_tui.call"]) == len(set(found["sdpa_tui.call"]))
    assert kernels_in_ranges(trace, "Torch-Compiled Region") == {}


def test_a_new_signature_makes_a_burst_due_unless_one_just_ended():
    from sdpa_tui.watch.probe.kernels import bursts

    schedule = bursts.KernelBursts()
    schedule.signature_seen()
    assert schedule.due, "the first CUDA signature: its kernels are read at once"
    schedule.due = False
    schedule._ended = time.monotonic()  # a burst has just stopped
    schedule.signature_seen()
    assert not schedule.due and not schedule.coverage_open() and not schedule.poll()
    schedule._ended -= bursts.MIN_GAP_S
    assert schedule.coverage_open(), "a wanted signature's next call may start one once the gap has passed"
    schedule._last_cost = 1.0  # a burst that cost a second: coverage waits four
    assert not schedule.coverage_open()
    schedule._ended -= bursts.COVERAGE_GAP * 1.0
    assert schedule.coverage_open()
    assert not bursts.KernelBursts(enabled=False).coverage_open()


def test_a_burst_ends_once_its_signatures_are_covered_the_schedules_too():
    from sdpa_tui.watch.probe.kernels import bursts

    coverage = bursts.KernelBursts()
    coverage.due = True
    coverage.start()
    assert coverage.active
    coverage.calls = bursts.MIN_BURST_CALLS - 1
    assert not coverage.should_stop(covered=True), "fewer calls than a burst's least"
    coverage.calls = bursts.MIN_BURST_CALLS
    assert coverage.should_stop(covered=True)
    assert not coverage.should_stop(covered=False), "a signature in it still wants samples: the burst goes on"
    coverage._started -= bursts.BURST_S
    assert coverage.should_stop(covered=False), "... for BURST_S at most once it has its least calls"
    coverage.stop()
    assert coverage.captures.count == 1 and not coverage.captures.failures

    scheduled = bursts.KernelBursts()
    scheduled.arm()
    scheduled._origin -= bursts.SCHEDULE_S[0]
    assert scheduled.poll()
    scheduled.start()
    scheduled.calls = bursts.MIN_BURST_CALLS
    assert scheduled.should_stop(covered=True), "a drift check needs no more calls than coverage (it ran 64)"
    scheduled.stop()


def test_no_window_starts_before_the_last_one_is_exported(monkeypatch):
    """A Kineto result exported after the next session started comes back untimed (H100, torch 2.11): a due
    window exports the last one on the calling thread first, if the background thread has not yet."""
    from torch.profiler import profile

    from sdpa_tui.watch.probe.kernels import bursts

    windows = bursts.KernelBursts()
    windows.due = True
    windows.start()
    windows.calls = bursts.MIN_BURST_CALLS
    windows.stop()
    assert windows.finished and windows.stopped.is_set(), "the background thread is woken to export it"
    events = []
    monkeypatch.setattr(bursts, "export", lambda profiler: events.append("export") or "trace.json")
    start = profile.start
    monkeypatch.setattr(profile, "start", lambda self: (events.append("start"), start(self)))
    windows.due = True
    windows.start()
    assert events == ["export", "start"] and windows.active and not windows.finished
    assert windows.exported == ["trace.json"], "read later by the background thread"
    windows.stop()


def test_a_window_that_cannot_start_is_counted_as_failed(monkeypatch):
    from torch.profiler import profile

    from sdpa_tui.watch.probe.kernels import bursts

    def refuse(self):
        raise RuntimeError("another profiler is running\nsecond line")

    monkeypatch.setattr(profile, "start", refuse)
    schedule = bursts.KernelBursts()
    schedule.due = True
    schedule.start()
    assert not schedule.active and not schedule.due
    assert schedule.captures.failures == ["start: RuntimeError: another profiler is running"]


def test_alternating_signatures_count_apart_and_a_fork_starts_over():
    import torch

    from sdpa_tui.watch.probe.fast_path import make_wrapper
    from sdpa_tui.watch.probe.slow_path import Probe

    probe = Probe(None, kernel_bursts=False)
    sdpa = make_wrapper(torch.nn.functional.scaled_dot_product_attention, probe)
    a, b = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 6, 8)
    for x in (a, b, a, a, b, a, a):  # repeats and switches: the last-seen key must not leak across
        sdpa(x, x, x, is_causal=True)
    sdpa(a, a, a)  # same tensors, other scalars: another signature
    assert sorted((e.stats.signature.q_shape[2], e.stats.signature.causal, e.count) for e in probe.entries) == [
        (4, False, 1), (4, True, 5), (6, True, 2)]
    probe._stop.set()
    probe.after_fork_in_child()  # a child's calls go to its own entries, not the parent's last-seen one
    sdpa(a, a, a, is_causal=True)
    sdpa(a, a, a, is_causal=True)
    assert [e.count for e in probe.entries] == [2]
    probe._stop.set()


COMPILED_ON_CPU = """
import json, sys, torch
import torch.nn.functional as F
from torch._dynamo.utils import counters
from sdpa_tui.watch.probe.install import install
probe = install(None, kernel_bursts=False)
attend = torch.compile(lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True) * 2.0, backend="eager")
q = torch.randn(2, 2, 16, 8)
for _ in range(5):
    attend(q)
class M(torch.nn.Module):
    def forward(self, q):
        return F.scaled_dot_product_attention(q, q, q)
torch.export.export(M(), (q,), strict=False)  # make_fx runs the wrapper: torch.compiler's flag is set
print(json.dumps({"breaks": dict(counters["graph_break"]), "recompiles": dict(counters["recompiles"]),
                  "graphs": counters["stats"]["unique_graphs"], "counted": sum(e.count for e in probe.entries)}))
"""


def test_compiled_calls_are_counted_by_graph_runs_and_exported_ones_pass_through():
    out = subprocess.run([sys.executable, "-c", COMPILED_ON_CPU], capture_output=True, text=True, timeout=240,
                         env=ENV, cwd=REPO, check=True).stdout
    # five runs of the one compiled graph, one SDPA call each; export's trace is not a call; no break, no recompile
    assert json.loads(out.splitlines()[-1]) == {"breaks": {}, "recompiles": {}, "graphs": 1, "counted": 5}


def test_a_call_site_outside_the_working_directory_keeps_its_path(tmp_path, monkeypatch):
    from sdpa_tui.watch.probe.explain.origin import short_path

    inside = tmp_path / "work" / "train.py"
    outside = tmp_path / "elsewhere" / "model.py"
    inside.parent.mkdir()
    monkeypatch.chdir(inside.parent)
    assert short_path(str(inside)) == "train.py"
    assert short_path(str(outside)) == str(outside)  # not ../elsewhere/model.py
    import transformers.integrations.sdpa_attention as installed

    assert short_path(installed.__file__) == os.path.join("transformers", "integrations", "sdpa_attention.py")


def test_compiled_calls_on_the_cpu_match_the_profiler(tmp_path):
    """Inductor on the CPU: watch's compiled rows against torch.profiler's backend ops in a plain run."""
    program = (sys.executable, str(PROGRAMS / "compiled_cpu.py"))
    reference = tmp_path / "profile.json"
    plain_out = subprocess.run(list(program), capture_output=True, text=True, timeout=400, cwd=REPO, check=True,
                               env={**ENV, "SDPA_TUI_TEST_PROFILE": str(reference)}).stdout
    ops = json.loads(reference.read_text())
    forward = [o for o in ops if o["name"] == "aten::_scaled_dot_product_flash_attention_for_cpu"]
    backward = [o for o in ops if o["name"] == "aten::_scaled_dot_product_flash_attention_for_cpu_backward"]
    proc, report = watch(tmp_path, *program)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == plain_out.strip()  # watching changed no output
    rows = {c["grad"]: c for c in report["calls"]}
    assert set(rows) == {True, False} and all(c["compiled"] and c["count_exact"] for c in rows.values())
    warm_up = 2 * 2  # two layers, one training step and one no-grad call before the profiled part
    assert rows[True]["count"] + rows[False]["count"] - warm_up == len(forward)
    assert rows[True]["count"] - 2 == len(backward)
    assert {tuple(tuple(s) for s in o["shapes"][:3]) for o in forward} == {
        (tuple(c["q_shape"]), tuple(c["kv_shape"]), tuple(c["kv_shape"])) for c in rows.values()}
    for row in rows.values():
        assert row["backend"] == "FLASH_ATTENTION", "read from the profiled graph run"
        assert row["site"].endswith("compiled_cpu.py:24") and row["compiled_fn"] == "forward"
        assert row["modules"] == ["layers.{0..1}"]
        assert row["check"]["samples"] == 0 and "compiled graph" in row["check"]["note"], "said, not silently unchecked"
    assert rows[True]["backward"]["backend"] == "FLASH_ATTENTION"


def test_each_call_site_of_one_signature_keeps_its_calls_exact_then_sampled():
    """Two lines make one signature: the first MODULE_CALLS calls count at their site one by one, later ones every
    TIME_EVERY-th for TIME_EVERY, so a site seen only late is still named, with its calls estimated."""
    import torch

    from sdpa_tui.watch.probe.fast_path import make_wrapper
    from sdpa_tui.watch.probe.slow_path import MODULE_CALLS, TIME_EVERY, Probe

    probe = Probe(None, kernel_bursts=False)
    sdpa = make_wrapper(lambda q, k, v, *args, **kwargs: q, probe)
    q = torch.randn(1, 2, 4, 8)

    def at_first_line(n: int) -> None:
        for _ in range(n):
            sdpa(q, q, q)

    def at_second_line(n: int) -> None:
        for _ in range(n):
            sdpa(q, q, q)

    first, second = (f"tests/processes/watch/test_watch_cpu.py:{f.__code__.co_firstlineno + 2}" for f in (at_first_line, at_second_line))
    at_first_line(3)
    at_second_line(5)
    (entry,) = probe.entries
    assert entry.snapshot().sites == {first: 3, second: 5} and not entry.stats.sites_sampled
    at_first_line(MODULE_CALLS - 8 + 44)  # the rest of the exact calls, then 44 unnoted ones
    at_second_line(300)  # after them: every TIME_EVERY-th call noted
    state = ProcessState.from_dict(probe.state().to_dict())
    (row,) = build_report(["x.py"], 0, [state], 1.0).rows
    assert row.count == 600 and row.sites_sampled and dict(row.sites).keys() == {first, second}
    assert sum(n for _, n in row.sites) == 600
    assert all(abs(n - 300) <= TIME_EVERY for _, n in row.sites), row.sites
    probe._stop.set()


def test_two_sites_of_one_signature_and_multihead_attentions_fast_path_at_80_columns(tmp_path):
    """A tiny Llama with a padding mask called from two lines (one signature), nn.MultiheadAttention in eval under
    no_grad (SDPA inside C++), a GQA call, SDPA on jagged nested tensors: each site listed with its calls, the fast
    path's and the nested calls counted and said, every line of the report within 80 columns, the program's output
    unchanged (a nested call's symbolic shapes had ended a watched program with a traceback and exit code 1)."""
    pytest.importorskip("transformers")
    program = (sys.executable, str(PROGRAMS / "two_sites.py"))
    proc, report = watch(tmp_path, *program, columns=80)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == plain(*program).strip(), "counting the fast path changes nothing the program computes"
    # the last line names the report's file as given: its length is the path's (pytest-xdist's tmp_path is longer)
    assert out[-1] == f"wrote {tmp_path / 'calls.json'}", out[-1]
    assert max(len(line) for line in out[1:-1]) <= 80, proc.stdout
    llama = next(c for c in report["calls"] if c["mask"]["kind"] == "bool")
    sites = {s["site"].rsplit(":", 1)[1]: s["count"] for s in llama["sites"]}
    assert sites == {"22": 6, "24": 10} and llama["count"] == 16 and not llama["sites_sampled"]  # 2 layers a call
    assert llama["module_count"] == 2 and llama["layouts"][0] == "blhd", "transformers' queries: [b, l, h, d] transposed"
    nested, mha = sorted(report["uninspected"], key=lambda u: u["count"])
    assert mha["count"] == 7 and "torch._native_multi_head_attention" in mha["path"]
    assert [s.rsplit(":", 1)[1] for s in mha["sites"]] == ["26"] and mha["modules"] == ["MultiheadAttention"]
    assert nested["count"] == 3 and "nested tensors" in nested["path"] and "nested tensors" in nested["why"]
    assert [s.rsplit(":", 1)[1] for s in nested["sites"]] == ["33"]
    text = " ".join(proc.stdout.split())
    assert "NOT INSPECTED: 7 calls of nn.MultiheadAttention's fast path" in text
    assert "NOT INSPECTED: 3 calls of torch.nn.functional.scaled_dot_product_attention on nested tensors" in text
    assert "two_sites.py:24 (10 calls), :22 (6 calls)" in text
    # the rows are ranked by time share, which a busy host can reorder: the Llama's row is found by its sites
    rows = [line for line in out if re.match(r"\d  ", line)]
    assert len(rows) == 2 and all(row.endswith("%") for row in rows), rows
    assert sum(bool(re.match(r"[12]  two_sites\.py:24,22  ", row)) for row in rows) == 1, rows


def test_format_json_prints_the_report_alone_on_stdout(shapes_output):
    proc = subprocess.run(
        [sys.executable, "-m", "sdpa_tui", "watch", "--format", "json", "--no-advice", "--", sys.executable,
         str(PROGRAMS / "shapes.py")], capture_output=True, text=True, timeout=240, cwd=REPO, env=ENV,
        stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)  # the program's own line went to stderr
    assert len(report["calls"]) == 5 and report["exit_code"] == 0
    assert proc.stderr.splitlines()[0] == shapes_output.strip()


SCRIPTED_UNDER_WATCH = """
import json, warnings, torch
from sdpa_tui.watch.probe.install import install
warnings.simplefilter("ignore")
probe = install(None, kernel_bursts=False)
attention = torch.nn.MultiheadAttention(32, 4, batch_first=True).eval()
x = torch.randn(2, 10, 32)
scripted = torch.jit.script(attention)  # compiles F.scaled_dot_product_attention and the fast path as their ops
same = torch.equal(scripted(x, x, x)[0], attention(x, x, x)[0])
with torch.no_grad():
    attention(x, x, x, need_weights=False)
print(json.dumps({"same": same, "counted": {u.path: u.count for u in probe.uninspected if u.count}}))
"""


def test_modules_that_call_the_rebound_functions_can_still_be_scripted():
    """torch.jit.script finds F.scaled_dot_product_attention and the fast path by the function's id: a Python function
    in their place failed to compile ("... got builtin_function_or_method") until registered as the same ops."""
    out = subprocess.run([sys.executable, "-c", SCRIPTED_UNDER_WATCH], capture_output=True, text=True, timeout=240,
                         env=ENV, cwd=REPO, check=True).stdout
    result = json.loads(out.splitlines()[-1])
    assert result["same"] is True
    (path, count), = result["counted"].items()
    assert count == 1 and path.startswith("nn.MultiheadAttention's fast path"), result
