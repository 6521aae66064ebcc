"""The supervisor moves the engine to another GPU: the old process stops, a new one starts on
the new device at once (no backoff, no "engine died"), and gets the configuration."""

from __future__ import annotations

import threading

from support.real_data import H200

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.protocol.engine_commands import Configure
from sdpa_tui.core.protocol.engine_events import EngineDied, EngineStarting
from sdpa_tui.core.protocol.records import Ready
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.host.supervisor import EngineSupervisor
from sdpa_tui.telemetry.device_choice import DeviceError, VisibleGpus


class LiveClient:
    """An engine process that stays alive until stopped."""

    def __init__(self, device: str) -> None:
        self.device, self.sent = device, []
        self.pid = 1000 + int(device.rsplit(":", 1)[1]) if ":" in device else 1000
        self.pids = frozenset({self.pid})  # the engine (a real one adds its profiler process)
        self.stopped = threading.Event()
        self._records = [Ready(H200)]

    def start(self) -> None:
        pass

    def send(self, record: object) -> bool:
        self.sent.append(record)
        return True

    def receive(self, timeout: float = 0.0) -> list[object]:
        records, self._records = self._records, []
        if not records:
            self.stopped.wait(timeout)
        return records

    @property
    def alive(self) -> bool:
        return not self.stopped.is_set()

    @property
    def exit_code(self) -> int | None:
        return 0 if self.stopped.is_set() else None

    def stop(self, timeout: float = 5.0) -> None:
        self.stopped.set()


def test_switch_device_restarts_the_engine_there() -> None:
    clients: list[LiveClient] = []
    events: list[object] = []
    second = threading.Event()

    def factory(device: str) -> LiveClient:
        clients.append(LiveClient(device))
        if len(clients) == 2:
            second.set()
        return clients[-1]

    supervisor = EngineSupervisor("cuda:0", on_records=lambda rs: None, on_event=events.append,
                                  client_factory=factory, backoff_s=(60.0,))
    config = Configure(4, Workload(), (Backend.MATH,))
    supervisor.configure(config)
    supervisor.start()
    try:
        while not clients or config not in clients[0].sent:
            threading.Event().wait(0.01)
        supervisor.switch_device("cuda:1")
        assert second.wait(5.0), "a new engine starts at once"
        while config not in clients[1].sent:
            threading.Event().wait(0.01)
    finally:
        supervisor.stop()
    assert [c.device for c in clients] == ["cuda:0", "cuda:1"]
    assert clients[0].stopped.is_set()
    assert not any(isinstance(e, EngineDied) for e in events)
    assert events[:2] == [EngineStarting(1), EngineStarting(1)]


def test_device_engines_one_per_gpu_same_configuration() -> None:
    import pytest

    from sdpa_tui.engine.host.device_engines import DeviceEngines

    clients: dict[str, LiveClient] = {}
    got: list[tuple[int, object]] = []

    def factory(device: str) -> LiveClient:
        clients[device] = LiveClient(device)
        return clients[device]

    engines = DeviceEngines((0, 2), on_records=lambda i, rs: got.extend((i, r) for r in rs),
                            on_event=lambda i, e: None, client_factory=factory, gpus=VisibleGpus((0, 1, 2)))
    config = Configure(7, Workload(), (Backend.FLASH,))
    engines.configure(config)
    engines.start()
    try:
        while len(got) < 2 or not all(config in c.sent for c in clients.values()):
            threading.Event().wait(0.01)
        assert sorted(clients) == ["cuda:0", "cuda:2"]
        assert sorted(i for i, r in got if isinstance(r, Ready)) == [0, 2]  # tagged with their GPU
        engines.switch_device("cuda:2")
        assert engines.shown == 2 and len(clients) == 2  # nothing restarted
        with pytest.raises(ValueError, match="cuda:1 is not one of the measured GPUs"):
            engines.switch_device("cuda:1")
        assert len(engines.engine_pids) == 2
    finally:
        engines.stop()
    assert all(c.stopped.is_set() for c in clients.values())


def test_device_engines_follow_cuda_visible_devices() -> None:
    """CUDA_VISIBLE_DEVICES=1,3: NVML's GPUs 1 and 3 are cuda:0 and cuda:1 in the engines."""
    import pytest

    from sdpa_tui.engine.host.device_engines import DeviceEngines

    made: list[str] = []

    def factory(device: str) -> LiveClient:
        made.append(device)
        return LiveClient(device)

    engines = DeviceEngines((1, 3), on_records=lambda i, rs: None, on_event=lambda i, e: None,
                            client_factory=factory, gpus=VisibleGpus((1, 3)))
    assert engines.cuda_devices == {1: "cuda:0", 3: "cuda:1"}
    engines.switch_device("cuda:1")
    assert engines.shown == 3
    with pytest.raises(DeviceError, match="GPU 2"):
        DeviceEngines((2,), on_records=lambda i, rs: None, on_event=lambda i, e: None,
                      client_factory=factory, gpus=VisibleGpus((1, 3)))
