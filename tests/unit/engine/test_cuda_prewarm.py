"""The engine's prewarm: the GPU's primary context and cuDNN's libraries beside torch's import, skipped where it
cannot run (its gain is measured on a GPU: docs/lab-notes/gpu-measurements.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sdpa_tui.engine.child import cuda_prewarm
from sdpa_tui.engine.child.cuda_prewarm import Prewarm, gpu_ordinal, library_files, read_ahead

pytestmark = pytest.mark.torch_range


@pytest.mark.parametrize("request_,ordinal", [("auto", 0), ("cuda", 0), ("cuda:3", 3), ("cpu", None), ("cuda:x", None)])
def test_the_gpu_an_engine_will_use(request_: str, ordinal: int | None) -> None:
    assert gpu_ordinal(request_) == ordinal


def _fake_wheels(root: Path) -> list[Path]:
    made = []
    for name, files in (("cudnn", ("libcudnn.so.9", "libcudnn_engines_precompiled.so.9")), ("cublas", ("libcublasLt.so.13",)),
                        ("nccl", ("libnccl.so.2",))):
        lib = root / "nvidia" / name / "lib"
        lib.mkdir(parents=True)
        for f in files:
            (lib / f).write_bytes(b"\0" * 4096)
            made.append(lib / f)
    return made


def test_the_libraries_of_the_nvidia_wheels_are_found_and_read_ahead(tmp_path: Path, monkeypatch) -> None:
    made = _fake_wheels(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "nvidia" or m.startswith("nvidia.")]:
        monkeypatch.delitem(sys.modules, name)
    found = [f for f in library_files() if str(f).startswith(str(tmp_path))]
    assert found == [f for f in made if "cudnn" in str(f)], "cuDNN's libraries, what SDPA's pick loads"
    chosen = [f for f in library_files(("cublas", "cudnn")) if str(f).startswith(str(tmp_path))]
    assert chosen == [f for f in made if "cublas" in str(f)] + found, "the folders named, in their order"
    assert read_ahead(chosen) == 3 * 4096
    assert read_ahead([tmp_path / "missing.so"]) == 0


def test_a_cpu_engine_does_nothing() -> None:
    prewarm = Prewarm("cpu")
    prewarm.start()
    assert prewarm.report(1.0) == "prewarm: not started (a CPU engine)"


def test_without_a_gpu_context_nothing_is_read_and_the_reason_is_said(monkeypatch) -> None:
    monkeypatch.setattr(cuda_prewarm, "DRIVER_NODE", __file__)  # a driver node that exists
    monkeypatch.setattr(cuda_prewarm, "retain_primary_context", lambda ordinal: "cuInit: CUDA_ERROR_NO_DEVICE")
    monkeypatch.setattr(cuda_prewarm, "read_ahead", lambda files: pytest.fail("read ahead without a GPU"))
    prewarm = Prewarm("auto")
    prewarm.start()
    assert prewarm.report(5.0) == "prewarm: no primary context (cuInit: CUDA_ERROR_NO_DEVICE)"


def test_with_a_context_the_libraries_are_read_ahead(monkeypatch) -> None:
    monkeypatch.setattr(cuda_prewarm, "DRIVER_NODE", __file__)
    monkeypatch.setattr(cuda_prewarm, "retain_primary_context", lambda ordinal: None)
    monkeypatch.setattr(cuda_prewarm, "library_files", lambda names: [Path(__file__)] if names else [])
    prewarm = Prewarm("cuda:1")
    prewarm.start()
    line = prewarm.report(5.0)
    assert line.startswith("prewarm: primary context of GPU 1 made in ")
    assert line.endswith("libraries read ahead (cudnn)")
    monkeypatch.setenv(cuda_prewarm.READAHEAD_ENV, "")
    context_only = Prewarm("cuda:1")
    context_only.start()
    assert context_only.report(5.0).endswith(" 0 MiB of libraries read ahead (none)")


def test_no_driver_node_or_switched_off_starts_nothing(monkeypatch) -> None:
    monkeypatch.setattr(cuda_prewarm, "DRIVER_NODE", "/nonexistent/nvidiactl")
    prewarm = Prewarm("auto")
    prewarm.start()
    assert prewarm.report() == "prewarm: not started (no /nonexistent/nvidiactl)"
    monkeypatch.setenv(cuda_prewarm.OFF_ENV, "1")
    off = Prewarm("auto")
    off.start()
    assert off.report() == "prewarm: off (SDPA_TUI_NO_PREWARM=1)"


@pytest.mark.cuda
def test_on_a_gpu_the_context_made_is_the_one_torch_runs_in() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    from cuda.bindings import driver

    assert cuda_prewarm.retain_primary_context(0) is None
    torch.cuda.set_device(0)
    assert float(torch.ones(4, device="cuda:0").sum()) == 4.0
    _, current = driver.cuCtxGetCurrent()
    _, device = driver.cuDeviceGet(0)
    _, primary = driver.cuDevicePrimaryCtxRetain(device)
    assert int(current) == int(primary) != 0
