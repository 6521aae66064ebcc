"""``sdpa-tui watch`` on a GPU: each call's own kernel time and kernels, the chosen backend's kernels, real
models (forward and backward), and torch.compile (calls counted per graph run, no graph break or recompile)."""

from __future__ import annotations

import json
import sys

import pytest
from support.paths import PROGRAMS
from support.watching import plain, watch

from sdpa_tui.core.traces.kernel_names import ATTENTION_FAMILIES, identify

pytestmark = [pytest.mark.cuda, pytest.mark.torch_range]

_FAMILY_BACKEND = {"cuDNN": "CUDNN_ATTENTION", "FlashAttention": "FLASH_ATTENTION",
                   "CUTLASS memory-efficient": "EFFICIENT_ATTENTION"}


def attention_backends(kernels: list[str]) -> set[str]:
    """The SDPBackend names whose kernels appear among ``kernels`` (MATH has none of its own)."""
    found = set()
    for name in kernels:
        family = identify(name).family
        if family in ATTENTION_FAMILIES:
            found.update(b for prefix, b in _FAMILY_BACKEND.items() if family.startswith(prefix))
    return found


def test_plain_script_rows_have_gpu_time_kernels_and_the_backend_torch_ran(tmp_path):
    proc, report = watch(tmp_path, sys.executable, str(PROGRAMS / "cuda_shapes.py"))
    assert proc.returncode == 0, proc.stderr
    calls = report["calls"]
    assert len(calls) == 5, [c["q_shape"] for c in calls]
    for call in calls:
        what = f"{call['q_shape']} {call['dtype']} {call['flags']}: {call['backend']} {call['kernels'][:3]}"
        assert call["device"].startswith("cuda") and call["count"] == 40, what
        assert call["kernel_us"]["n"] >= 8 and 0 < call["kernel_us"]["median"] <= call["kernel_us"]["p90"], what
        assert call["first_call_us"] > 0 and call["kernels"], what
        ran = attention_backends(call["kernels"])
        if call["backend"] == "MATH":
            assert not ran, what  # matmul and softmax kernels, no fused attention kernel
        else:
            assert ran == {call["backend"]}, what
    forced = next(c for c in calls if c["flags"] == ["MATH"])
    assert forced["backend"] == "MATH" and "flag is off" in forced["why_not"]["FLASH_ATTENTION"]
    fp32 = next(c for c in calls if c["dtype"] == "torch.float32")
    assert fp32["backend"] != "FLASH_ATTENTION" and fp32["why_not"]["FLASH_ATTENTION"]
    assert report["kernels_note"] is None


def test_transformers_llama_bf16_on_cuda_rows_name_modules_and_kernels(tmp_path):
    pytest.importorskip("transformers")
    program = (sys.executable, str(PROGRAMS / "hf_models.py"), "cuda", "bfloat16")
    proc, report = watch(tmp_path, *program)
    assert proc.returncode == 0, proc.stderr
    calls = report["calls"]
    llama = [c for c in calls if (c["module"] or "").startswith("LlamaForCausalLM:model.layers.")]
    assert llama, [(c["module"], c["q_shape"]) for c in calls]
    assert all(c["dtype"] == "torch.bfloat16" and c["device"].startswith("cuda") for c in calls)
    assert any(c["grad"] for c in llama), "the training steps record autograd"
    assert all(c["kernel_us"]["n"] > 0 and c["kernels"] for c in calls), "every signature profiled"
    assert any(c["modules"] == ["LlamaForCausalLM:model.layers.{0..1}.self_attn"] for c in llama)
    # each site is the program's own line, past transformers', torch's and (transformers 5.25+) kernels' wrappers
    sites = {s["site"].rsplit(":", 1)[0] for c in llama for s in c["sites"]}
    assert sites and all(site.endswith("hf_models.py") for site in sites), sites
    trained = [c for c in llama if c["grad"]]
    assert all(c["backward"] and c["backward"]["kernel_us"]["n"] > 0 and c["backward"]["kernels"] for c in trained)
    assert 0 < report["sdpa_share_of_gpu"] < 1
    for call in llama:
        if call["backend"] != "MATH":
            assert attention_backends(call["kernels"]) == {call["backend"]}, (call["backend"], call["kernels"])


def test_compiled_attention_is_named_its_kernels_seen_and_dynamo_unchanged(tmp_path):
    program = (sys.executable, str(PROGRAMS / "compiled_attention.py"))
    proc, report = watch(tmp_path, *program)
    assert proc.returncode == 0, proc.stderr
    watched, alone = (json.loads(next(line for line in out.splitlines() if line.startswith('{"dynamo"')))
                      for out in (proc.stdout, plain(*program)))
    assert watched["dynamo"] == alone["dynamo"], "watch added a graph break or a recompile"
    assert watched["total"] == alone["total"]
    compiled = report["compiled"]
    assert any(f.startswith("attend (compiled at ") and "compiled_attention.py" in f for f in compiled["functions"])
    assert compiled["attention_kernels"], "the bursts see the attention kernels inside compiled regions"
    assert all(identify(k).family in ATTENTION_FAMILIES for k in compiled["attention_kernels"])
    rows = {c["compiled"]: c for c in report["calls"]}
    assert rows[False]["count"] == 5 and rows[True]["count"] == 60, "eager calls apart from the graph's runs"
    graph = rows[True]
    assert graph["count_exact"] and graph["site"].endswith("compiled_attention.py:14") and graph["compiled_fn"] == "attend"
    assert graph["backend"] and attention_backends(graph["kernels"]) == {graph["backend"]}
    assert graph["kernel_us"]["n"] > 0


def test_cupti_detached_after_the_scheduled_window_and_later_signatures_still_profiled(tmp_path):
    """After the first shape's window none is due for over 10 s (the schedule's first comes at 30 s): watch lets Kineto
    detach CUPTI (a launch costs less from then on). Shapes that appear later re-attach it and are profiled, and a
    pause with no CUDA call hangs nothing."""
    proc, report = watch(tmp_path, sys.executable, str(PROGRAMS / "late_shapes.py"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Warning" not in proc.stderr, "the profiler's windows say nothing on the program's stderr"
    captures = report["captures"]
    assert captures["detached"] >= 1 and captures["untimed"] == 0 and not captures["failures"], captures
    assert len(report["calls"]) == 3
    for call in report["calls"]:
        assert call["kernel_us"]["n"] >= 8 and call["kernels"], (call["q_shape"], call["kernel_us"], captures)


WINDOWS_AFTER_A_KEPT_CUPTI = """
import json, time, torch
from torch.autograd.profiler import record_function
from sdpa_tui.watch.probe.kernels.bursts import MIN_BURST_CALLS, KernelBursts

x = torch.randn(256, 256, device="cuda")
windows = KernelBursts()

def calls(n):
    for _ in range(n):
        with record_function("sdpa-tui#0"):
            x @ x
    torch.cuda.synchronize()

def settle():
    deadline = time.monotonic() + 10
    while windows.cupti.guarding(time.monotonic()):  # a teardown finishes in a CUDA call's exit
        assert time.monotonic() < deadline
        calls(1)

def window(**stop):
    settle()
    windows.due = True
    windows.start(record_shapes=False)
    calls(MIN_BURST_CALLS)
    windows.stop(**stop)
    windows.export_all()
    return sum(1 for call in windows.read_next().reading.ranged if call.activities)

calls(1)
with_gpu_work = [window(), window(wanted_left=True, sampled=0), window(), window()]
settle()  # no teardown left waiting at exit
print(json.dumps({"with_gpu_work": with_gpu_work, "detached": windows.captures.detached}))
"""


def test_every_window_records_gpu_work_whether_the_last_kept_cupti_or_let_it_go():
    """Windows as the probe runs them, through real Kineto: one that detaches CUPTI, a follow-up (a window spent on
    first calls) that keeps it, then two that detach. Kineto tears an attached CUPTI down at a start that finds
    ``TEARDOWN_CUPTI=1``: on an H200 the window after a follow-up recorded its calls and none of their GPU work."""
    import subprocess

    from support.watching import ENV

    from sdpa_tui.watch.probe.kernels.bursts import MIN_BURST_CALLS

    proc = subprocess.run([sys.executable, "-c", WINDOWS_AFTER_A_KEPT_CUPTI], capture_output=True, text=True,
                          timeout=120, env=ENV, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["with_gpu_work"] == [MIN_BURST_CALLS] * 4, got
    assert got["detached"] == 3, got


def test_the_host_lead_read_at_a_call_is_the_gpu_work_queued_before_it_timed_on_the_host_alone():
    """The lead watch reads (a CUDA event against an anchor, ``watch/probe/host_lead.py``) against an independent
    reading of the same thing: GPU work of a known length queued right after the anchor, the call made some host time
    later, and the host's own clock when an event recorded right after the call is seen done, polled without a pause
    (the GPU then reached the call).

    On the loaded H200 (12 cores spinning, a GPU neighbour busy half the time) the lead once read a 2.5-ms backlog
    2,517 to 2,559 µs against this reading's 2,722 to 2,954: the anchor's event, timed from its record, had waited
    for the neighbour's time slice; the anchor now meets the clocks where the host sees the GPU pass it. Polling can
    be late, where the busy host takes the core from it, so each case is read five times and the median of the five
    differences is held to the tolerance."""
    import statistics
    import time

    import torch

    from sdpa_tui.core.calls.call_signature import CallSignature
    from sdpa_tui.core.calls.watched_calls import CallStats
    from sdpa_tui.watch.probe.host_lead import LeadClock
    from sdpa_tui.watch.probe.kernels.profile_readings import Entry

    torch.cuda.init()
    torch.cuda._sleep(1_000)  # warm the kernel up: its first launch loads it
    torch.cuda.synchronize()
    sig = CallSignature((1, 1, 8, 8), (1, 1, 8, 8), "torch.float16", "cuda:0", None, None)
    for backlog_cycles, host_gap_s in [(20_000_000, 0.002), (60_000_000, 0.010), (5_000_000, 0.0)]:
        pairs = []
        for _ in range(5):
            entry = Entry(CallStats(sig), 0, cuda=True)
            clock = LeadClock()
            torch.cuda.synchronize()
            clock.anchor_now([entry])
            torch.cuda._sleep(backlog_cycles)  # milliseconds of GPU work the call will queue behind
            deadline = time.perf_counter() + host_gap_s
            while time.perf_counter() < deadline:  # the host's own work between the anchor and the call
                pass
            clock.sample(entry, torch.device("cuda", 0))
            called = time.perf_counter()
            reached = torch.cuda.Event()
            reached.record()
            while not reached.query():  # no pause: the host sees the GPU reach the call as it does
                assert time.perf_counter() - called < 10.0, "the GPU never reached the call"
            independent_us = (time.perf_counter() - called) * 1e6  # the GPU reached the call this long after it was made
            clock.collect(wait=True)
            (read_us,) = entry.stats.lead_us
            pairs.append((read_us, independent_us))
        independent = statistics.median(i for _, i in pairs)
        off = statistics.median(r - i for r, i in pairs)
        assert abs(off) <= max(0.05 * independent, 100.0), (backlog_cycles, host_gap_s, pairs)


WARMED_DURING_A_CAPTURE = """
import json, threading
import torch
from sdpa_tui.watch.probe.checks import kernel_warm_up
from sdpa_tui.watch.probe.install import install

capturing = threading.Event()
context_device = kernel_warm_up.context_device
kernel_warm_up.context_device = lambda: context_device() if capturing.is_set() else None  # sees it once capturing
probe = install(None)
x = torch.full((256, 256), 0.5, device="cuda")  # the program's context
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    y = x @ x  # the op run once before its capture, as torch's recipe asks
torch.cuda.current_stream().wait_stream(side)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):  # torch's default: the global capture mode
    y = x @ x
    capturing.set()
    warmed_in_time = probe.warm_up.done.wait(120)  # the warm-up runs whole while the program captures
x.fill_(1.0)
graph.replay()
torch.cuda.synchronize()
got = {"warmed": probe.warm_up.warmed, "in_time": warmed_in_time, "replayed": bool((y == 256.0).all())}
probe.finish(at_exit=True)
print(json.dumps(got))
"""


def test_the_warm_up_leaves_a_cuda_graph_the_program_captures_meanwhile_whole():
    """A program that captures a CUDA graph (``torch.cuda.graph``, the global capture mode) while watch's warm-up
    allocates and launches on its own thread: the capture succeeds and replays the program's op, and the warm-up's
    checks all ran (its thread is in the relaxed capture mode; in the default mode its first allocation fails and
    invalidates the program's capture)."""
    import subprocess

    from support.watching import ENV

    proc = subprocess.run([sys.executable, "-c", WARMED_DURING_A_CAPTURE], capture_output=True, text=True,
                          timeout=240, env=ENV, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got == {"warmed": 6, "in_time": True, "replayed": True}, got


WARMED_BEFORE_THE_FIRST_CALL = """
import json, time
import torch
import torch.nn.functional as F
from sdpa_tui.core.calls.watched_calls import OutputCheck
from sdpa_tui.watch.probe.checks import output_check
from sdpa_tui.watch.probe.install import install

torch.zeros(1, device="cuda")  # the program makes its context, then spends a while on its host
probe = install(None)
main_stream = torch.cuda.current_stream()
deadline = time.monotonic() + 60
while not probe.warm_up.done.is_set() and time.monotonic() < deadline:
    sum(range(10_000))  # Python work, as an optimizer's construction does
q, k, v = (torch.randn(2, 4, 256, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
check = OutputCheck()
output_check.check_output(check, out, q, k, v, None, 0.0, True, None, False)
got = {"warmed": probe.warm_up.warmed, "same_stream": torch.cuda.current_stream() == main_stream,
       "ok": check.ok, "samples": check.samples, "error": check.max_rel_error}
probe.finish(at_exit=True)  # as the bootstrap does at the program's end: the window it started stopped and read
print(json.dumps(got))
"""


def test_the_checks_kernels_are_warmed_while_the_program_runs_python_after_its_context_and_its_checks_still_hold():
    """Watch's warm-up (``watch/probe/checks/kernel_warm_up.py``) runs the three checks on tiny tensors once the
    program has a context and before its first SDPA call, on a stream of its own: the program's thread keeps its
    stream, and its own call's check afterwards compares as before (a real bf16 call within tolerance)."""
    import subprocess

    from support.watching import ENV

    proc = subprocess.run([sys.executable, "-c", WARMED_BEFORE_THE_FIRST_CALL], capture_output=True, text=True,
                          timeout=180, env=ENV, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["warmed"] == 6, got
    assert got["same_stream"] and got["ok"] is True and got["samples"] == 1 and 0 < got["error"] < 1e-2, got
