"""NVML wrapper: a fake pynvml-like module injected, plus the real pynvml on this box."""

from __future__ import annotations

import sys
import threading
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest

from sdpa_tui.telemetry import (
    NOT_INSTALLED,
    NVML_FIELDS,
    GpuPoller,
    GpuProcess,
    GpuSnapshot,
    NvmlReader,
    decode_clock_event_reasons,
)

NOT_SUPPORTED, GPU_IS_LOST, UNINITIALIZED, FUNCTION_NOT_FOUND = 3, 15, 1, 13
LIBRARY_NOT_FOUND, RM_MISMATCH = 12, 18


class FakeNVMLError(Exception):
    """Like pynvml.NVMLError: a ``value`` code and NVML's text as ``str``."""

    TEXT = {
        UNINITIALIZED: "Uninitialized",
        NOT_SUPPORTED: "Not Supported",
        LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
        FUNCTION_NOT_FOUND: "Function Not Found",
        GPU_IS_LOST: "GPU is lost",
        RM_MISMATCH: "RM has detected an NVML/RM version mismatch.",
    }

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return self.TEXT.get(self.value, f"Unknown Error {self.value}")


class FakeNvml:
    """The pynvml functions the reader uses. ``fail`` maps a function name to an error code."""

    NVMLError = FakeNVMLError
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0
    NVML_ERROR_UNINITIALIZED, NVML_ERROR_GPU_IS_LOST = UNINITIALIZED, GPU_IS_LOST
    NVML_ERROR_FUNCTION_NOT_FOUND = FUNCTION_NOT_FOUND

    def __init__(self, fail: dict[str, int] | None = None, missing: set[str] = frozenset(),
                 reasons: int = 0, processes: list[Any] | None = None) -> None:
        self.fail = dict(fail or {})
        self.missing = set(missing)
        self.reasons = reasons
        self.procs = processes or []
        self.calls: list[str] = []
        self.inits = self.shutdowns = 0

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("nvml") and name in object.__getattribute__(self, "missing"):
            raise AttributeError(name)
        return object.__getattribute__(self, name)

    def _call(self, name: str, value: Any) -> Any:
        self.calls.append(name)
        if name in self.fail:
            raise FakeNVMLError(self.fail[name])
        return value

    def nvmlInit(self) -> None:
        self._call("nvmlInit", None)
        self.inits += 1

    def nvmlShutdown(self) -> None:
        self._call("nvmlShutdown", None)
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return self._call("nvmlSystemGetDriverVersion", "580.65.06")

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:
        return self._call("nvmlDeviceGetHandleByIndex", ("handle", index))

    def nvmlDeviceGetName(self, h: Any) -> bytes:
        return self._call("nvmlDeviceGetName", b"NVIDIA H100 80GB HBM3")

    def nvmlDeviceGetUUID(self, h: Any) -> str:
        return self._call("nvmlDeviceGetUUID", "GPU-1234")

    def nvmlDeviceGetUtilizationRates(self, h: Any) -> Any:
        return self._call("nvmlDeviceGetUtilizationRates", SimpleNamespace(gpu=87, memory=42))

    def nvmlDeviceGetMemoryInfo(self, h: Any) -> Any:
        info = SimpleNamespace(total=85_520_809_984, used=1_073_741_824, free=84_447_068_160)
        return self._call("nvmlDeviceGetMemoryInfo", info)

    def nvmlDeviceGetClockInfo(self, h: Any, kind: int) -> int:
        return self._call("nvmlDeviceGetClockInfo", {1: 1980, 2: 2619}[kind])

    def nvmlDeviceGetMaxClockInfo(self, h: Any, kind: int) -> int:
        return self._call("nvmlDeviceGetMaxClockInfo", {1: 1980, 2: 2619}[kind])

    def nvmlDeviceGetPowerUsage(self, h: Any) -> int:
        return self._call("nvmlDeviceGetPowerUsage", 312_456)  # mW

    def nvmlDeviceGetEnforcedPowerLimit(self, h: Any) -> int:
        return self._call("nvmlDeviceGetEnforcedPowerLimit", 700_000)  # mW

    def nvmlDeviceGetTemperatureV(self, h: Any, sensor: int) -> int:
        return self._call("nvmlDeviceGetTemperatureV", 54)

    def nvmlDeviceGetTemperature(self, h: Any, sensor: int) -> int:
        return self._call("nvmlDeviceGetTemperature", 55)

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: Any) -> int:
        return self._call("nvmlDeviceGetCurrentClocksEventReasons", self.reasons)

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h: Any) -> int:
        return self._call("nvmlDeviceGetCurrentClocksThrottleReasons", self.reasons)

    def nvmlDeviceGetComputeRunningProcesses(self, h: Any) -> list[Any]:
        return self._call("nvmlDeviceGetComputeRunningProcesses", self.procs)

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        if pid == 999:
            raise FakeNVMLError(NOT_SUPPORTED)
        return self._call("nvmlSystemGetProcessName", f"/usr/bin/proc{pid}")


def test_all_good_snapshot_and_units() -> None:
    nv = FakeNvml()
    snap = NvmlReader(nvml=nv).snapshot()
    assert snap.available and snap.errors == {} and snap.reason is None
    assert snap.name == "NVIDIA H100 80GB HBM3"  # bytes decoded
    assert snap.driver_version == "580.65.06" and snap.uuid == "GPU-1234"
    assert (snap.utilization_gpu_pct, snap.utilization_mem_pct) == (87, 42)
    assert snap.memory_used_bytes == 1_073_741_824 and snap.memory_total_bytes == 85_520_809_984
    assert (snap.sm_clock_mhz, snap.mem_clock_mhz, snap.sm_clock_max_mhz) == (1980, 2619, 1980)
    assert snap.power_w == pytest.approx(312.456) and snap.power_limit_w == pytest.approx(700.0)
    assert snap.temperature_c == 54  # the non-deprecated call is preferred
    assert snap.clock_event_reasons == ("none",) and snap.throttled is False
    assert snap.processes == () and snap.time > 0
    assert snap.fmt("power_w", ".0f") == "312" and snap.fmt("temperature_c") == "54"
    assert "nvmlDeviceGetCurrentClocksThrottleReasons" not in nv.calls
    assert nv.inits == 1


def test_not_supported_field_is_none_with_reason() -> None:
    nv = FakeNvml(fail={"nvmlDeviceGetPowerUsage": NOT_SUPPORTED,
                        "nvmlDeviceGetUtilizationRates": NOT_SUPPORTED})
    snap = NvmlReader(nvml=nv).snapshot()
    assert snap.power_w is None and snap.fmt("power_w") == "n/a"
    assert snap.utilization_gpu_pct is None and snap.utilization_mem_pct is None
    assert snap.errors == {"power_w": "Not Supported", "utilization_gpu_pct": "Not Supported",
                           "utilization_mem_pct": "Not Supported"}
    assert snap.why("power_w") == "Not Supported" and snap.why("name") == ""
    assert snap.available and snap.power_limit_w == 700.0 and snap.temperature_c == 54


@pytest.mark.parametrize("code,text", [(LIBRARY_NOT_FOUND, "NVML Shared Library Not Found"),
                                       (RM_MISMATCH, "RM has detected an NVML/RM version mismatch.")])
def test_init_failure_all_na(code: int, text: str) -> None:
    nv = FakeNvml(fail={"nvmlInit": code})
    reader = NvmlReader(nvml=nv)
    assert reader.open() is False and reader.reason == text
    for _ in range(2):
        snap = reader.snapshot()
        assert not snap.available and snap.reason == text
        assert all(getattr(snap, f) is None for f in NVML_FIELDS)
        assert snap.errors == {f: text for f in NVML_FIELDS} and snap.throttled is False
    assert nv.calls == ["nvmlInit"]  # tried once, not on every poll
    reader.close()
    assert nv.shutdowns == 0


def test_gpu_lost_midway_stops_calling() -> None:
    nv = FakeNvml(fail={"nvmlDeviceGetClockInfo": GPU_IS_LOST})
    reader = NvmlReader(nvml=nv)
    snap = reader.snapshot()
    assert snap.name == "NVIDIA H100 80GB HBM3" and snap.memory_total_bytes is not None
    assert snap.reason == "GPU is lost" and not snap.available
    for f in ("sm_clock_mhz", "mem_clock_mhz", "sm_clock_max_mhz", "power_w", "power_limit_w",
              "temperature_c", "clock_event_reasons", "processes"):
        assert getattr(snap, f) is None and snap.errors[f] == "GPU is lost"
    assert nv.calls[-1] == "nvmlDeviceGetClockInfo"  # nothing called after the loss
    # The next poll fetches the handle again (the old one is dead).
    nv.fail = {"nvmlDeviceGetHandleByIndex": GPU_IS_LOST}
    snap = reader.snapshot()
    assert snap.reason == "GPU is lost" and snap.name is None and snap.errors["name"] == "GPU is lost"
    assert nv.calls[-1] == "nvmlDeviceGetHandleByIndex"


def test_uninitialized_reinits_next_time() -> None:
    nv = FakeNvml(fail={"nvmlDeviceGetName": UNINITIALIZED})
    reader = NvmlReader(nvml=nv)
    assert reader.snapshot().reason == "Uninitialized"
    nv.fail = {}
    assert reader.snapshot().available and nv.inits == 2


def test_bad_index_reads_na_for_device() -> None:
    nv = FakeNvml(fail={"nvmlDeviceGetHandleByIndex": 2})
    snap = NvmlReader(index=7, nvml=nv).snapshot()
    assert snap.reason == "GPU 7: Unknown Error 2" and snap.driver_version == "580.65.06"
    assert snap.name is None and "driver_version" not in snap.errors


def test_missing_pynvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    reader = NvmlReader()
    snap = reader.snapshot()
    assert snap.reason == NOT_INSTALLED == "nvidia-ml-py not installed"
    assert snap.errors["power_w"] == NOT_INSTALLED and snap.name is None
    reader.close()


def test_throttle_reason_decoding() -> None:
    assert decode_clock_event_reasons(pynvml.nvmlClocksEventReasonNone) == ("none",)
    assert decode_clock_event_reasons(pynvml.nvmlClocksEventReasonGpuIdle) == ("idle",)
    mask = (pynvml.nvmlClocksEventReasonSwPowerCap | pynvml.nvmlClocksEventReasonHwSlowdown
            | pynvml.nvmlClocksEventReasonSwThermalSlowdown)
    assert decode_clock_event_reasons(mask) == ("SW power cap", "HW slowdown", "SW thermal slowdown")
    assert decode_clock_event_reasons(pynvml.nvmlClocksEventReasonHwThermalSlowdown
                                      | pynvml.nvmlClocksEventReasonHwPowerBrakeSlowdown) == (
        "HW thermal slowdown", "HW power brake slowdown")
    board_limit = getattr(pynvml, "nvmlClocksThrottleReasonBoardLimit", 0x200)  # newer nvidia-ml-py only
    assert decode_clock_event_reasons(board_limit) == ("board limit",)
    assert decode_clock_event_reasons(0x10000) == ("unknown (0x10000)",)
    # Every reason bit the installed pynvml knows has a label.
    for name in dir(pynvml):
        if name.startswith(("nvmlClocksEventReason", "nvmlClocksThrottleReason")) and not name.endswith(
                ("All", "None")):
            assert "unknown" not in decode_clock_event_reasons(getattr(pynvml, name))[0], name

    not_throttled = pynvml.nvmlClocksEventReasonGpuIdle | pynvml.nvmlClocksEventReasonApplicationsClocksSetting
    snap = NvmlReader(nvml=FakeNvml(reasons=not_throttled)).snapshot()
    assert snap.clock_event_reasons == ("idle", "applications clocks setting") and not snap.throttled
    snap = NvmlReader(nvml=FakeNvml(reasons=pynvml.nvmlClocksEventReasonSwPowerCap)).snapshot()
    assert snap.clock_event_reasons == ("SW power cap",) and snap.throttled
    assert snap.fmt("clock_event_reasons") == "SW power cap"


def test_throttle_reasons_fallback_to_deprecated_call() -> None:
    nv = FakeNvml(missing={"nvmlDeviceGetCurrentClocksEventReasons"},
                  reasons=pynvml.nvmlClocksThrottleReasonHwSlowdown)
    snap = NvmlReader(nvml=nv).snapshot()
    assert snap.clock_event_reasons == ("HW slowdown",) and snap.throttled
    assert "nvmlDeviceGetCurrentClocksThrottleReasons" in nv.calls
    # Missing in the driver (Function Not Found) falls back too; Not Supported does not.
    nv = FakeNvml(fail={"nvmlDeviceGetCurrentClocksEventReasons": FUNCTION_NOT_FOUND,
                        "nvmlDeviceGetTemperatureV": FUNCTION_NOT_FOUND})
    snap = NvmlReader(nvml=nv).snapshot()
    assert snap.clock_event_reasons == ("none",) and snap.temperature_c == 55 and snap.errors == {}
    nv = FakeNvml(fail={"nvmlDeviceGetCurrentClocksEventReasons": NOT_SUPPORTED})
    snap = NvmlReader(nvml=nv).snapshot()
    assert snap.clock_event_reasons is None and snap.errors["clock_event_reasons"] == "Not Supported"
    assert "nvmlDeviceGetCurrentClocksThrottleReasons" not in nv.calls
    # Missing from both: a plain reason, no exception.
    nv = FakeNvml(missing={"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"})
    snap = NvmlReader(nvml=nv).snapshot()
    assert snap.clock_event_reasons is None and "not in this nvidia-ml-py" in snap.errors["clock_event_reasons"]


def test_processes_and_own_pids() -> None:
    procs = [SimpleNamespace(pid=100, usedGpuMemory=2 << 30), SimpleNamespace(pid=200, usedGpuMemory=None),
             SimpleNamespace(pid=999, usedGpuMemory=1 << 20)]
    nv = FakeNvml(processes=procs)
    reader = NvmlReader(nvml=nv)
    snap = reader.snapshot(own_pids={100})
    assert snap.processes == (GpuProcess(100, 2 << 30, "/usr/bin/proc100"),
                              GpuProcess(200, None, "/usr/bin/proc200"),
                              GpuProcess(999, 1 << 20, ""))  # name NVML cannot give -> ''
    assert [p.pid for p in snap.other_processes] == [200, 999]
    assert snap.errors == {} and 100 in snap.own_pids
    reader.snapshot(own_pids={100})
    assert nv.calls.count("nvmlSystemGetProcessName") == 2  # names are cached per pid
    assert snap.to_dict()["processes"][0] == {"pid": 100, "used_bytes": 2 << 30, "name": "/usr/bin/proc100"}


def test_unavailable_constructor() -> None:
    snap = GpuSnapshot.unavailable("no GPU (CPU mode)")
    assert not snap.available and snap.fmt("memory_used_bytes") == "n/a"
    assert snap.why("temperature_c") == "no GPU (CPU mode)" and snap.other_processes == ()


def test_poller_delivers_and_stops() -> None:
    nv = FakeNvml()
    got: list[GpuSnapshot] = []
    two = threading.Event()

    def on_snapshot(snap: GpuSnapshot) -> None:
        got.append(snap)
        if len(got) >= 2:
            two.set()

    poller = GpuPoller(on_snapshot, interval=0.01, reader=NvmlReader(nvml=nv), own_pids={42})
    poller.start()
    assert two.wait(5.0)
    poller.stop()
    assert not poller.running
    n = len(got)
    assert n >= 2 and all(s.available and 42 in s.own_pids for s in got)
    assert got[0].time <= got[1].time
    two.clear()
    assert not two.wait(0.05) and len(got) == n  # nothing after stop()


def test_poller_survives_callback_error_and_closes_own_reader() -> None:
    calls = threading.Event()
    seen: list[int] = []

    def bad(snap: GpuSnapshot) -> None:
        seen.append(1)
        if len(seen) >= 2:
            calls.set()
        raise RuntimeError("UI went away")

    poller = GpuPoller(bad, interval=0.01)  # real pynvml: n/a snapshots, no exception
    poller.reader._nvml = FakeNvml()
    poller.start()
    assert calls.wait(5.0)
    nv = poller.reader._nvml
    poller.stop()
    assert nv.shutdowns == 1


def test_real_pynvml_never_raises() -> None:
    reader = NvmlReader()
    snap = reader.snapshot()
    if snap.available:  # a machine with a GPU
        assert isinstance(snap.name, str)
    else:
        assert snap.reason and all(getattr(snap, f) is None for f in NVML_FIELDS)
        assert set(snap.errors) == set(NVML_FIELDS)
    reader.close()
    reader.close()  # twice is fine
