"""Every engine the app can hold, real or fake, has the seam's members (``core/protocol/engine_handle.py``): a fake that
drifts from the real engine, or a real one that loses a method the app calls, fails here."""

from __future__ import annotations

import sys

import pytest
from support.paths import REPO, REPORTS
from support.ui_fakes import FakeDeviceEngines, FakeEngine

from sdpa_tui.core.protocol.engine_handle import EngineHandle, EnginesPerGpu
from sdpa_tui.engine.host.device_engines import DeviceEngines
from sdpa_tui.engine.host.supervisor import EngineSupervisor
from sdpa_tui.telemetry.device_choice import VisibleGpus


def members(protocol: type) -> set[str]:
    return {name for cls in protocol.__mro__ if cls.__module__ == EngineHandle.__module__
            for name in vars(cls) if not name.startswith("_")}


def one_engine() -> list[object]:
    sys.path.insert(0, str(REPO / "benchmarks" / "monitor"))
    try:
        from ui_replay import ReplayEngine
    finally:
        sys.path.remove(str(REPO / "benchmarks" / "monitor"))
    report = __import__("json").loads((REPORTS / "h100-torch2.11" /
                                       "report-small.json").read_text())
    return [EngineSupervisor("cpu", on_records=lambda records: None, on_event=lambda event: None), FakeEngine(),
            ReplayEngine(report, 0.5)]


def per_gpu() -> list[object]:
    return [DeviceEngines((0, 2), on_records=lambda i, rs: None, on_event=lambda i, e: None,
                          gpus=VisibleGpus((0, 1, 2))), FakeDeviceEngines((0, 1))]


@pytest.mark.parametrize("engine", one_engine() + per_gpu(), ids=lambda e: type(e).__name__)
def test_every_engine_has_the_seams_members(engine):
    missing = {name for name in members(EngineHandle) if not callable(getattr(type(engine), name, None))
               and not hasattr(engine, name)}
    assert not missing, f"{type(engine).__name__} lacks {sorted(missing)}"
    assert isinstance(engine, EngineHandle)
    assert isinstance(engine.engine_pids, frozenset)


@pytest.mark.parametrize("engine", per_gpu(), ids=lambda e: type(e).__name__)
def test_engines_per_gpu_say_which_gpus_and_one_engine_does_not(engine):
    assert members(EnginesPerGpu) - members(EngineHandle) == {"devices", "cuda_devices"}
    assert isinstance(engine, EnginesPerGpu)
    assert set(engine.cuda_devices) == set(engine.devices)
    assert not any(isinstance(e, EnginesPerGpu) for e in one_engine()), "the app shows one GPU for these"
