"""A stand-in ``pynvml`` module for a host with several GPUs, injected as ``sys.modules["pynvml"]``.

SYNTHETIC readings: plausible values for an 8x H100 SXM host (80 GiB, 700 W, SM 1980 MHz max,
memory clock 2619 MHz as nvidia-ml-py reports on an H100), not recorded from a real machine.
Each GPU's reading can be changed per test (a throttled GPU, a shared one, a failing call).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace
from typing import Any

NOT_SUPPORTED, UNINITIALIZED, LIBRARY_NOT_FOUND = 3, 1, 12
TEXT = {NOT_SUPPORTED: "Not Supported", UNINITIALIZED: "Uninitialized",
        LIBRARY_NOT_FOUND: "NVML Shared Library Not Found"}

# nvmlClocksEventReason* bits (nvidia-ml-py 13)
SW_POWER_CAP, HW_SLOWDOWN, SW_THERMAL, HW_THERMAL, GPU_IDLE = 0x4, 0x8, 0x20, 0x40, 0x1


@dataclass
class FakeGpu:
    """One GPU's synthetic reading; ``fail`` maps an NVML function name to an error code."""

    name: str = "NVIDIA H100 80GB HBM3"
    util: int = 0
    mem_util: int = 0
    used: int = 612 * 2**20
    total: int = 85_520_809_984
    sm_mhz: int = 1980
    mem_mhz: int = 2619
    power_mw: int = 71_000
    limit_mw: int = 700_000
    temp: int = 33
    reasons: int = 0
    processes: list[tuple[int, int]] = field(default_factory=list)  # (pid, used bytes)
    fail: dict[str, int] = field(default_factory=dict)


class NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return TEXT.get(self.value, f"Unknown Error {self.value}")


def busy(**changes: Any) -> FakeGpu:
    """A GPU an engine is measuring on."""
    values = dict(util=97, mem_util=41, used=3_410 * 2**20, power_mw=312_000, temp=41)
    values.update(changes)
    return FakeGpu(**values)


def make_module(gpus: list[FakeGpu], init_error: int | None = None) -> ModuleType:
    """A module with the pynvml functions sdpa-tui calls, answering from ``gpus``."""
    mod = ModuleType("pynvml")
    mod.NVMLError = NVMLError
    mod.NVML_CLOCK_SM, mod.NVML_CLOCK_MEM, mod.NVML_TEMPERATURE_GPU = 1, 2, 0  # as in pynvml
    mod.NVML_ERROR_UNINITIALIZED, mod.NVML_ERROR_FUNCTION_NOT_FOUND, mod.NVML_ERROR_GPU_IS_LOST = 1, 13, 15
    mod.gpus = gpus
    mod.calls = []
    mod.inits = 0

    def call(name: str, gpu: FakeGpu | None, value: Any) -> Any:
        mod.calls.append(name)
        if gpu is not None and name in gpu.fail:
            raise NVMLError(gpu.fail[name])
        return value

    def init() -> None:
        if init_error is not None:
            raise NVMLError(init_error)
        mod.inits += 1

    def shutdown() -> None:
        mod.inits -= 1

    h = lambda handle: mod.gpus[handle]  # noqa: E731 - a handle is the index here
    mod.nvmlInit, mod.nvmlShutdown = init, shutdown
    mod.nvmlDeviceGetCount = lambda: len(mod.gpus)
    mod.nvmlSystemGetDriverVersion = lambda: "580.95.05"
    mod.nvmlDeviceGetHandleByIndex = lambda i: call("handle", None, i)
    mod.nvmlDeviceGetName = lambda i: call("nvmlDeviceGetName", h(i), h(i).name)
    mod.nvmlDeviceGetUUID = lambda i: f"GPU-0000000{i}-fake"
    mod.nvmlDeviceGetUtilizationRates = lambda i: call(
        "nvmlDeviceGetUtilizationRates", h(i), SimpleNamespace(gpu=h(i).util, memory=h(i).mem_util))
    mod.nvmlDeviceGetMemoryInfo = lambda i: call(
        "nvmlDeviceGetMemoryInfo", h(i), SimpleNamespace(used=h(i).used, total=h(i).total))
    mod.nvmlDeviceGetClockInfo = lambda i, kind: call(
        "nvmlDeviceGetClockInfo", h(i), h(i).sm_mhz if kind == 1 else h(i).mem_mhz)
    mod.nvmlDeviceGetMaxClockInfo = lambda i, kind: 1980 if kind == 1 else 2619
    mod.nvmlDeviceGetPowerUsage = lambda i: call("nvmlDeviceGetPowerUsage", h(i), h(i).power_mw)
    mod.nvmlDeviceGetEnforcedPowerLimit = lambda i: h(i).limit_mw
    mod.nvmlDeviceGetTemperatureV = lambda i, sensor: call("nvmlDeviceGetTemperatureV", h(i), h(i).temp)
    mod.nvmlDeviceGetCurrentClocksEventReasons = lambda i: call(
        "nvmlDeviceGetCurrentClocksEventReasons", h(i), h(i).reasons)
    mod.nvmlDeviceGetComputeRunningProcesses = lambda i: call(
        "nvmlDeviceGetComputeRunningProcesses", h(i),
        [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in h(i).processes])
    mod.nvmlSystemGetProcessName = lambda pid: "python3" if pid < 100_000 else "train.py"
    return mod


def eight_gpus(engine_pids: tuple[int, ...] = ()) -> list[FakeGpu]:
    """An 8-GPU host: engines on the first ones, GPU 3 power-capped, GPU 5 shared with a trainer."""
    gpus = [FakeGpu() for _ in range(8)]
    for index, pid in enumerate(engine_pids):
        gpus[index] = busy(processes=[(pid, 3_072 * 2**20)])
    gpus[3] = busy(reasons=SW_POWER_CAP, sm_mhz=1605, power_mw=699_000, temp=58,
                   processes=gpus[3].processes)
    gpus[5] = busy(util=100, used=41_200 * 2**20, processes=[*gpus[5].processes, (123_456, 40 * 2**30)])
    gpus[7] = FakeGpu(temp=88, reasons=HW_THERMAL | SW_THERMAL, sm_mhz=1410)
    return gpus


def install(monkeypatch: Any, gpus: list[FakeGpu] | None = None, init_error: int | None = None) -> ModuleType:
    """Put a fake ``pynvml`` in ``sys.modules`` for the test (so ``import pynvml`` finds it)."""
    mod = make_module(gpus if gpus is not None else eight_gpus(), init_error)
    monkeypatch.setitem(sys.modules, "pynvml", mod)
    return mod
