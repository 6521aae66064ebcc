"""``--device``: a device that is not here is bad input (one line, exit 2) before any engine starts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from support.paths import REPO

from sdpa_tui import cli
from sdpa_tui.telemetry import device_choice
from sdpa_tui.telemetry.device_choice import DeviceError, VisibleGpus, check_device, find_gpus, parse_visible_devices

NO_GPU = VisibleGpus((), "no CUDA GPU is visible")
ONE_GPU = VisibleGpus((0,))


class FakeNvml:
    """Stands in for ``pynvml``: ``uuids`` are the GPUs; ``fail`` makes nvmlInit raise."""

    def __init__(self, uuids=(), fail=None):
        self.uuids, self.fail, self.shut = list(uuids), fail, False

    def nvmlInit(self):
        if self.fail:
            raise self.fail

    def nvmlShutdown(self):
        self.shut = True

    def nvmlDeviceGetCount(self):
        return len(self.uuids)

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetUUID(self, handle):
        return self.uuids[handle].encode()


@pytest.mark.parametrize("spec, gpus, expected", [
    ("auto", NO_GPU, "cpu"), ("auto", ONE_GPU, "cuda:0"), ("cpu", ONE_GPU, "cpu"),
    ("cuda", ONE_GPU, "cuda:0"), ("cuda:0", ONE_GPU, "cuda:0"), ("cuda:1", VisibleGpus((2, 3)), "cuda:1"),
])
def test_devices_that_exist_resolve(spec, gpus, expected):
    assert check_device(spec, gpus) == expected


@pytest.mark.parametrize("spec, gpus, words", [
    ("cuda", NO_GPU, "no CUDA GPU is visible"),
    ("cuda:0", NO_GPU, "no CUDA GPU is visible"),
    ("cuda:7", ONE_GPU, "1 GPU(s) visible (cuda:0)"),
    ("cuda:2", VisibleGpus((0, 1)), "2 GPU(s) visible (cuda:0, cuda:1)"),
    ("gpu", ONE_GPU, "got 'gpu'"),
])
def test_devices_that_do_not_exist_are_refused(spec, gpus, words):
    with pytest.raises(DeviceError) as info:
        check_device(spec, gpus)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_cpu_needs_no_gpu_lookup(monkeypatch):
    monkeypatch.setattr(device_choice, "find_gpus", lambda: pytest.fail("looked for GPUs"))
    assert check_device("cpu") == "cpu"


def test_visible_devices_follow_cuda_visible_devices():
    uuids = ["GPU-aaaa-1", "GPU-bbbb-2", "GPU-cccc-3"]
    assert parse_visible_devices(None, uuids) == [0, 1, 2]
    assert parse_visible_devices("", uuids) == []
    assert parse_visible_devices("2,0", uuids) == [2, 0]
    assert parse_visible_devices("1,7,0", uuids) == [1]  # the list ends at the first invalid entry
    assert parse_visible_devices("1,1", uuids) == [1]
    assert parse_visible_devices("-1", uuids) == []
    assert parse_visible_devices("GPU-bbbb,0", uuids) == [1, 0]
    assert parse_visible_devices("GPU-zzzz", uuids) == []
    assert parse_visible_devices("MIG-1234", uuids) == [-1]


def test_find_gpus_counts_through_nvml_with_the_mask():
    nvml = FakeNvml(["GPU-a", "GPU-b"])
    assert find_gpus(nvml, {}, torch_cuda="12.8") == VisibleGpus((0, 1))
    assert nvml.shut, "NVML is shut down again"
    assert find_gpus(nvml, {"CUDA_VISIBLE_DEVICES": "1"}, torch_cuda="12.8") == VisibleGpus((1,))
    hidden = find_gpus(nvml, {"CUDA_VISIBLE_DEVICES": ""}, torch_cuda="12.8")
    assert hidden.count == 0 and "CUDA_VISIBLE_DEVICES=" in hidden.why_none


def test_find_gpus_without_cuda_torch_or_driver():
    assert find_gpus(FakeNvml(["GPU-a"]), {}, torch_cuda=None).why_none == "this torch build has no CUDA"
    broken = find_gpus(FakeNvml(fail=RuntimeError("libnvidia-ml.so not found")), {}, torch_cuda="12.8")
    assert broken.count == 0 and "no NVIDIA driver" in broken.why_none and "libnvidia-ml" in broken.why_none


@pytest.mark.parametrize("argv", [["report", "--device", "cuda:7"], ["sweep", "--device", "cuda:7"],
                                  ["--device", "cuda:7"], ["report", "--device", "cuda"]])
def test_the_cli_refuses_before_any_engine_starts(argv, monkeypatch, capsys):
    monkeypatch.setattr(device_choice, "find_gpus", lambda: NO_GPU if argv[-1] == "cuda" else ONE_GPU)
    for module, name in (("sdpa_tui.commands.report", "run_report"), ("sdpa_tui.commands.sweep", "run_sweep"),
                         ("sdpa_tui.commands.monitor", "run_app")):
        monkeypatch.setattr(f"{module}.{name}", lambda *a: pytest.fail("an engine would start"))
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith(f"sdpa-tui: error: --device {argv[-1]}: "), captured.err


def test_the_default_falls_back_to_the_cpu(monkeypatch):
    monkeypatch.setattr(device_choice, "find_gpus", lambda: NO_GPU)
    seen = []
    monkeypatch.setattr("sdpa_tui.commands.report.run_report", lambda args, *a: seen.append(args.device) or 0)
    assert cli.main(["report"]) == 0 and seen == ["cpu"]


def test_the_engine_says_why_it_runs_on_the_cpu():
    torch = pytest.importorskip("torch")
    from sdpa_tui.engine.measuring.environment import resolve_device

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    device, notes = resolve_device("auto")
    assert device.type == "cpu" and notes and "--device cpu" not in notes[0]
    assert "--device cpu" not in resolve_device("cpu")[1][0]  # it fell back: say why, not "you asked"
    with pytest.raises(RuntimeError):
        resolve_device("cuda")


def test_the_cpu_environment_names_torchs_default_priority_order():
    """report --json on the CPU wrote ``environment.default_priority_order: []`` beside a filled
    ``dispatch.priority_order``: torch has an order on the CPU too."""
    torch = pytest.importorskip("torch")
    from sdpa_tui.engine.measuring.eligibility import priority_order
    from sdpa_tui.engine.measuring.environment import describe

    env = describe(torch.device("cpu"), ())
    assert env.default_priority_order == priority_order()
    assert "MATH" in env.default_priority_order


@pytest.mark.parametrize("command", ["report", "sweep"])
def test_the_real_command_exits_2_without_importing_torch(command, tmp_path):
    """``sdpa-tui report --device cuda:7``: exit 2, one line, no engine (torch never imported).

    Holds on a box without a GPU and on a GPU box with fewer than 8 GPUs.
    """
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    marker = tmp_path / "torch-was-imported"
    (fake / "torch" / "__init__.py").write_text(textwrap.dedent(f"""
        with open({str(marker)!r}, "a") as f:
            f.write("imported\\n")
        raise ImportError("sdpa-tui test: torch must not be imported here")
        """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), str(REPO)])}
    proc = subprocess.run([sys.executable, "-m", "sdpa_tui", command, "--device", "cuda:7"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("sdpa-tui: error: --device cuda:7: "), proc.stderr
    assert not marker.exists(), "torch was imported"


def test_the_nvml_index_follows_cuda_visible_devices():
    from sdpa_tui.telemetry.device_choice import nvml_index

    masked = VisibleGpus((3, 1))
    assert nvml_index("cuda:0", masked) == 3 and nvml_index("cuda:1", masked) == 1
    assert nvml_index("cpu", masked) is None and nvml_index("cuda:2", masked) is None
    assert nvml_index("cuda:0", VisibleGpus((-1,))) is None  # a MIG instance


def test_without_nvidia_ml_py_torch_counts(monkeypatch):
    """nvidia-ml-py missing must not turn a GPU box into a CPU one: torch counts instead."""
    import types

    class NoModule:
        def nvmlInit(self):
            raise ImportError("No module named 'pynvml'")

    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(device_count=lambda: 2))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    assert find_gpus(NoModule(), {}, torch_cuda="12.8") == VisibleGpus((0, 1))
