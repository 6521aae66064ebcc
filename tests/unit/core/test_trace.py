"""Reading real Chrome traces: H200 GPU traces (torch 2.11) and a CPU trace profiled here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import paths

from sdpa_tui.core.traces import trace
from sdpa_tui.core.traces.kernel_names import identify, main_kernel

FIXTURES = paths.FIXTURES / "traces" / "h200-torch2.11"


def _raw_gpu_events(path: Path) -> list[dict]:
    events = json.loads(path.read_text())["traceEvents"]
    return [e for e in events if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")]


# ----------------------------------------------------------------------------- load_trace
def test_load_trace_reads_a_fixture() -> None:
    t = trace.load_trace(FIXTURES / "FLASH_ATTENTION.json")
    assert isinstance(t["traceEvents"], list) and t["deviceProperties"][0]["name"] == "NVIDIA H200"


@pytest.mark.parametrize("content", ["not json at all", '{"foo": 1}', "[1, 2", '"a string"'])
def test_load_trace_refuses_non_traces(tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match="bad.json"):
        trace.load_trace(path)


def test_load_trace_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        trace.load_trace(tmp_path / "nope.json")


# ---------------------------------------------------------- GPU fixtures (one call each)
def test_flash_fixture() -> None:
    t = trace.load_trace(FIXTURES / "FLASH_ATTENTION.json")
    kernels = trace.gpu_activities(t)
    assert len(kernels) == 2 and all(k.category == "kernel" for k in kernels)
    assert trace.split_calls(t) == [kernels]  # no annotation: one call
    main = main_kernel(kernels)
    assert main is kernels[0] and "flash_fwd_splitkv_kernel<" in main.name
    assert main.grid == (8, 2, 16) and main.block == (128, 1, 1)
    assert main.registers == 255 and main.shared_memory == 73728
    assert main.duration_us == pytest.approx(7.584)
    assert main.blocks_per_sm == pytest.approx(1.939394) and main.occupancy == 0.0
    assert "combine" in kernels[1].name and kernels[1].occupancy == 48.0


def test_cudnn_fixture() -> None:
    path = FIXTURES / "CUDNN_ATTENTION.json"
    t = trace.load_trace(path)
    (call,) = trace.calls_of(t)
    assert [k.category for k in call] == ["gpu_memset", "kernel"]
    memset, kernel = call
    assert memset.name == "Memset (Device)" and memset.grid is None and memset.registers is None
    assert main_kernel(call) is kernel
    assert identify(kernel.name).describe() == "cuDNN fused attention, sm90, wgmma, tile 64x128x64, fp16"
    expected = sum(e["dur"] for e in _raw_gpu_events(path))
    assert sum(k.duration_us for k in call) == pytest.approx(expected)
    assert expected == pytest.approx(8.544)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.name)
def test_gpu_activities_match_the_file(path: Path) -> None:
    raw = sorted(_raw_gpu_events(path), key=lambda e: e["ts"])
    got = trace.gpu_activities(trace.load_trace(path))
    assert [k.name for k in got] == [e["name"] for e in raw]
    assert [k.duration_us for k in got] == [e["dur"] for e in raw]
    for k, e in zip(got, raw):
        if e["cat"] == "kernel":
            assert k.grid == tuple(e["args"]["grid"]) and k.registers == e["args"]["registers per thread"]


# ------------------------------------------ GPU traces with 3 annotated calls (H200, real)
@pytest.mark.parametrize(
    ("file", "per_call", "family"),
    [
        ("CUDNN_ATTENTION_3calls.json", 2, "cuDNN fused attention"),  # launched by cuLaunchKernelEx
        ("FLASH_ATTENTION_3calls.json", 2, "FlashAttention-2 split-KV forward"),
        ("EFFICIENT_ATTENTION_3calls.json", 1, "CUTLASS memory-efficient forward"),
        ("MATH_3calls.json", 14, "cuBLAS GEMM"),
    ],
)
def test_split_calls_by_annotation(file: str, per_call: int, family: str) -> None:
    t = trace.load_trace(FIXTURES / file)
    events = t["traceEvents"]
    assert sum(e.get("cat") == "gpu_user_annotation" for e in events) == 3  # ignored
    calls = trace.split_calls(t)
    assert trace.calls_of(t) == calls
    assert [len(c) for c in calls] == [per_call] * 3
    assert [k for c in calls for k in c] == trace.gpu_activities(t)  # calls keep order
    for call in calls:
        assert identify(main_kernel(call).name).family == family


def test_split_calls_drops_activities_outside_calls() -> None:
    t = trace.load_trace(FIXTURES / "FLASH_ATTENTION_3calls.json")
    ranges = [e for e in t["traceEvents"] if e.get("cat") == "user_annotation"]
    t["traceEvents"] = [e for e in t["traceEvents"] if e is not ranges[1]]
    calls = trace.split_calls(t)
    assert [len(c) for c in calls] == [2, 2]
    assert calls[0] == trace.gpu_activities(t)[:2] and calls[1] == trace.gpu_activities(t)[4:]


def test_split_calls_other_annotation_name() -> None:
    t = trace.load_trace(FIXTURES / "FLASH_ATTENTION_3calls.json")
    assert trace.split_calls(t, annotation="something.else") == [trace.gpu_activities(t)]


# ------------------------------------------------------ CPU trace, profiled here for real
@pytest.fixture(scope="module")
def cpu_trace(tmp_path_factory: pytest.TempPathFactory) -> dict:
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, record_function

    q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            with record_function(trace.ANNOTATION):
                torch.nn.functional.scaled_dot_product_attention(q, k, v)
    path = tmp_path_factory.mktemp("cpu") / "cpu.json"
    prof.export_chrome_trace(str(path))
    return trace.load_trace(path)


def test_cpu_trace_splits_into_three_calls(cpu_trace: dict) -> None:
    assert trace.gpu_activities(cpu_trace) == []
    assert trace.split_calls(cpu_trace) == [[], [], []]
    calls = trace.calls_of(cpu_trace)
    assert calls == trace.cpu_ops_per_call(cpu_trace)
    assert len(calls) == 3
    for call in calls:
        assert call and all(k.category == "cpu_op" and k.grid is None for k in call)
        names = [k.name for k in call]
        assert "aten::empty" in names or "aten::empty_like" in names  # leaves are there
        main = main_kernel(call)
        assert identify(main.name).family == "CPU flash attention"
        assert main.duration_us > 0


def test_cpu_ops_carry_self_time(cpu_trace: dict) -> None:
    ranges = [e for e in cpu_trace["traceEvents"] if e.get("cat") == "user_annotation"]
    ops = [e for e in cpu_trace["traceEvents"] if e.get("cat") == "cpu_op"]
    for call, r in zip(trace.cpu_ops_per_call(cpu_trace), sorted(ranges, key=lambda e: e["ts"])):
        inside = [e for e in ops if r["ts"] <= e["ts"] and e["ts"] + e["dur"] <= r["ts"] + r["dur"]]
        outer = max(inside, key=lambda e: e["dur"])
        # self times add up to the outermost op: nothing counted twice, nothing lost
        assert sum(k.duration_us for k in call) == pytest.approx(outer["dur"], rel=1e-6)
        leaves = [
            e
            for e in inside
            if not any(o is not e and e["ts"] <= o["ts"] and o["ts"] + o["dur"] <= e["ts"] + e["dur"] for o in inside)
        ]
        by_name = {(k.name, k.duration_us) for k in call}
        assert all((e["name"], float(e["dur"])) in by_name for e in leaves)
