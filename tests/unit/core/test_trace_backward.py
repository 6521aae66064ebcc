"""Backward kernels are launched from autograd's thread: they still belong to their call.

Traces recorded on an H100 (torch 2.11) by scripts/diagnostics/record_fixtures.py: 2 annotated
forward+backward calls per backend at [2, 8, 512, 64] fp16.
"""


import pytest
from support.paths import FIXTURES

from sdpa_tui.core.traces import kernel_names, trace

TRACES = FIXTURES / "traces" / "h100-torch2.11"


@pytest.mark.parametrize(
    "name, per_call",
    [("CUDNN_ATTENTION", 6), ("FLASH_ATTENTION", 7), ("EFFICIENT_ATTENTION", 4), ("MATH", 26)],
)
def test_forward_and_backward_kernels_are_split_per_call(name, per_call):
    calls = trace.split_calls(trace.load_trace(TRACES / f"{name}_fwd_bwd_2calls.json"))
    assert [len(c) for c in calls] == [per_call, per_call]
    directions = {kernel_names.identify(k.name).direction for k in calls[0]}
    if name != "MATH":  # MATH's backward is GEMMs and elementwise kernels, not named 'backward'
        assert {"forward", "backward"} <= directions


def test_the_backward_launches_are_on_another_thread_than_the_call():
    data = trace.load_trace(TRACES / "FLASH_ATTENTION_fwd_bwd_2calls.json")
    calls = [e for e in data["traceEvents"] if e.get("cat") == "user_annotation" and e.get("name") == "sdpa_tui.call"]
    launch_threads = {e["tid"] for e in data["traceEvents"] if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    assert len(launch_threads - {c["tid"] for c in calls}) >= 1
