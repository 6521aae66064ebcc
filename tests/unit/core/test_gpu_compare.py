"""Several GPUs side by side: ratios to the fastest, outliers (same kernel, slower), --devices."""

from __future__ import annotations

import pytest

from sdpa_tui.core.backends import ALL_BACKENDS
from sdpa_tui.core.lab.across_gpus import (
    GpuResult,
    comparison_dict,
    find_outliers,
    outlier_line,
    parse_devices,
    ratios_to_fastest,
    result_from_session,
)
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.workload import Workload

CUDNN = "cudnn_generated_fort_native_sdpa_sm90_flash_fprop"
FLASH = "flash_fwd_splitkv_kernel"


def gpu(i: int, us: float | None, kernel: str | None = CUDNN) -> GpuResult:
    return GpuResult(i, "NVIDIA H100", "cuDNN", kernel, us and us * 0.9, us, us and us * 5)


def test_a_slow_gpu_is_named() -> None:
    results = [gpu(0, 9.7), gpu(1, 9.8), gpu(2, 9.6), gpu(3, 12.4)]
    (out,) = find_outliers(results)
    assert out.gpu == 3 and out.kernel == CUDNN and out.clock == "gpu"
    assert out.others_us == pytest.approx(9.7) and out.ratio == pytest.approx(12.4 / 9.7)
    assert "GPU 3 is 1.28x the others" in outlier_line([out], 4)


def test_within_threshold_is_not_an_outlier() -> None:
    results = [gpu(0, 10.0), gpu(1, 10.9)]
    assert find_outliers(results) == ()
    assert [o.gpu for o in find_outliers(results, threshold=0.05)] == [1]
    assert outlier_line((), 2).startswith("outliers: none")


def test_a_different_kernel_is_not_compared() -> None:
    # GPU 1 runs another kernel: slower, but not "same kernel, different time"
    results = [gpu(0, 10.0), gpu(1, 30.0, FLASH), gpu(2, 10.1)]
    assert find_outliers(results) == ()


def test_gpus_without_numbers_are_left_out() -> None:
    results = [gpu(0, 10.0), gpu(1, None), gpu(2, 20.0, None)]
    assert find_outliers(results) == ()
    assert ratios_to_fastest(results) == {0: 1.0, 2: 2.0}  # a time without a kernel name still counts here
    assert outlier_line((), 1) == "outliers: one GPU only, nothing to compare"


def test_ratios_and_json() -> None:
    results = [gpu(0, 10.0), gpu(1, 15.0), gpu(2, 10.0)]
    assert ratios_to_fastest(results) == {0: 1.0, 1: 1.5, 2: 1.0}
    assert ratios_to_fastest(results, "eager") == pytest.approx({0: 1.0, 1: 1.5, 2: 1.0})
    d = comparison_dict(results)
    assert [g["ratio_to_fastest"] for g in d["gpus"]] == [1.0, 1.5, 1.0]
    assert [o["gpu"] for o in d["outliers"]] == [1]


def test_negative_threshold_rejected() -> None:
    with pytest.raises(ValueError):
        find_outliers([gpu(0, 1.0)], threshold=-0.1)


def test_result_of_a_session_without_numbers() -> None:
    r = result_from_session(2, Session(Workload(), ALL_BACKENDS), note="engine failed: boom")
    assert r.gpu == 2 and r.backend is None and r.gpu_us is None and r.note == "engine failed: boom"


@pytest.mark.parametrize("text,count,expected", [
    ("all", 2, (0, 1)), ("0,1", 8, (0, 1)), ("1", 2, (1,)), ("cuda:1,0,1", 2, (1, 0)), (" 3 ", 4, (3,)),
])
def test_parse_devices(text: str, count: int, expected: tuple[int, ...]) -> None:
    assert parse_devices(text, count) == expected


@pytest.mark.parametrize("text,count,message", [
    ("2", 2, "GPU 2 is out of range: this host has 2 GPU(s), 0 to 1"),
    ("0,x", 2, "takes 'all' or GPU indices"),
    ("", 2, "takes 'all' or GPU indices"),
    ("-1", 2, "takes 'all' or GPU indices"),
    ("all", 0, "no GPU found on this host (NVML sees no GPU)"),
    ("all", None, "no GPU found on this host (NVML sees no GPU)"),
])
def test_parse_devices_bad(text: str, count: int | None, message: str) -> None:
    with pytest.raises(ValueError, match=None) as info:
        parse_devices(text, count, "NVML sees no GPU")
    assert message in str(info.value)


def test_bad_syntax_is_said_before_the_missing_gpus() -> None:
    with pytest.raises(ValueError, match="takes 'all' or GPU indices"):
        parse_devices("0,x", None, "NVML Shared Library Not Found")


def test_clock_falls_back_where_there_is_no_device_clock() -> None:
    from sdpa_tui.core.lab.across_gpus import clock_for

    assert clock_for([gpu(0, 10.0)]) == "gpu"
    cpu = [GpuResult(0, backend="Math", kernel="k", eager_us=50.0), GpuResult(1, backend="Math", kernel="k", eager_us=80.0)]
    assert clock_for(cpu) == "eager"
    assert [o.gpu for o in find_outliers(cpu, clock="eager")] == [1]


def test_a_gpu_slow_only_on_the_eager_clock_is_named_on_it() -> None:
    # measured on two H200s (docs/lab-notes/gpus.md, 2026-11-26): GPU 1 time-sliced with a neighbour whose queue never empties
    results = [GpuResult(0, "NVIDIA H200", "cuDNN", CUDNN, 480.5, 487.6, 494.1),
               GpuResult(1, "NVIDIA H200", "cuDNN", CUDNN, 506.8, 497.9, 1465.7)]
    (out,) = find_outliers(results)
    assert (out.gpu, out.clock) == (1, "eager") and out.ratio == pytest.approx(1465.7 / 494.1)
    assert find_outliers(results, clock="gpu") == ()
    assert "GPU 1 is 2.97x the others" in outlier_line([out], 2) and "eager clock" in outlier_line([out], 2)
    assert [o["clock"] for o in comparison_dict(results)["outliers"]] == ["eager"]
    assert comparison_dict(results)["clock"] == "gpu", "the ratio column stays on GPU / call"


def test_a_gpu_slow_on_several_clocks_is_named_once_on_the_worst() -> None:
    results = [GpuResult(0, backend="cuDNN", kernel=CUDNN, kernel_us=10.0, gpu_us=10.0, eager_us=20.0),
               GpuResult(1, backend="cuDNN", kernel=CUDNN, kernel_us=12.0, gpu_us=13.0, eager_us=22.5)]
    (out,) = find_outliers(results)
    assert (out.gpu, out.clock) == (1, "gpu") and out.ratio == pytest.approx(1.3)
