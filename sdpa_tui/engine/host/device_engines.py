"""One engine process per GPU at once (``--devices``), behind the one-engine interface the UI uses.

Every engine gets the same configuration (workload, flags, pause). Records and events come
back tagged with the GPU they are from; ``shown`` is the GPU whose engine answers ``send``
(traces, snapshots) and ``engine_pid``. Imports no torch and no Textual.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from ...core.protocol.engine_commands import Configure
from ...telemetry.device_choice import VisibleGpus, cuda_device_of, find_gpus
from .client import EngineClient
from .supervisor import EngineSupervisor


def engine_device(index: int, gpus: VisibleGpus | None = None) -> str:
    """The torch device of NVML GPU ``index`` (the engine orders GPUs by PCI bus, as NVML;
    ``CUDA_VISIBLE_DEVICES`` renumbers them); DeviceError when the mask hides it."""
    return cuda_device_of(index, gpus)


class DeviceEngines:
    def __init__(
        self,
        devices: Sequence[int],
        on_records: Callable[[int, list[Any]], None],
        on_event: Callable[[int, Any], None],
        client_factory: Callable[[str], EngineClient] = EngineClient,
        gpus: VisibleGpus | None = None,
    ) -> None:
        """``devices``: NVML indices; ``gpus``: what CUDA sees from here (default: looked up)."""
        if not devices:
            raise ValueError("DeviceEngines needs at least one GPU")
        self.devices = tuple(devices)
        self.shown = self.devices[0]
        gpus = gpus if gpus is not None else find_gpus()
        self.cuda_devices = {index: engine_device(index, gpus) for index in self.devices}
        self.supervisors = {
            index: EngineSupervisor(self.cuda_devices[index], on_records=functools.partial(on_records, index),
                                    on_event=functools.partial(on_event, index), client_factory=client_factory)
            for index in self.devices
        }

    # -- the one-engine interface ----------------------------------------------------------
    def start(self) -> None:
        for s in self.supervisors.values():
            s.start()

    def stop(self) -> None:
        for s in self.supervisors.values():
            s.stop()

    def configure(self, config: Configure) -> None:
        for s in self.supervisors.values():
            s.configure(config)

    def set_paused(self, paused: bool) -> None:
        for s in self.supervisors.values():
            s.set_paused(paused)

    def retry(self) -> None:
        for s in self.supervisors.values():
            s.retry()

    def send(self, record: Any) -> bool:
        return self.supervisors[self.shown].send(record)

    def kill_engine(self) -> None:
        for s in self.supervisors.values():
            s.kill_engine()

    @property
    def engine_pid(self) -> int | None:
        return self.supervisors[self.shown].engine_pid

    @property
    def engine_pids(self) -> frozenset[int]:
        """Every engine and its profiler process, as :attr:`EngineSupervisor.engine_pids`."""
        return frozenset().union(*(s.engine_pids for s in self.supervisors.values()))

    def switch_device(self, device: str) -> None:
        """Show the engine on ``device`` (``cuda:N`` of one of ``devices``): every engine keeps
        measuring, none restarts."""
        shown = [index for index, cuda in self.cuda_devices.items() if cuda == device]
        if not shown:
            raise ValueError(f"{device} is not one of the measured GPUs (--devices {','.join(map(str, self.devices))})")
        self.shown = shown[0]
