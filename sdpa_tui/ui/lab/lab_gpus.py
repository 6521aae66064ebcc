"""Which GPU the lab measures on, and every GPU of the host: the overview, ``g`` to switch, history per GPU.

:class:`LabGpus` holds the device the panels show and answers what the overview and the chooser need; switching
keeps each GPU's :class:`Session` (the controller's) and restarts the engine on the new GPU through the engine's
``switch_device`` (with ``--devices``, every engine keeps measuring and another one's numbers are shown). It imports
no Textual: the app's ``g`` and handlers act on what it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...core.lab.across_gpus import GpuResult, result_from_session
from ...core.lab.lab_controller import LabController
from ...core.lab.session import Session
from ...core.protocol.engine_handle import EngineHandle, EnginesPerGpu
from ...telemetry.device_choice import DeviceError, VisibleGpus, cuda_device_of, find_gpus, gpu_index, hidden_gpus
from ...telemetry.host_gpus import HostGpus
from .engine_news import StatusLine


@dataclass(frozen=True)
class Switched:
    """The lab now shows GPU ``index``."""

    index: int
    engine_state: str
    status: StatusLine
    reconfigure: bool
    """The engine restarted there and needs the configuration again (one engine; not ``--devices``)."""


class LabGpus:
    """The shown GPU (``device``, ``watched_gpu``), the GPUs our engines measure on, and switching between them."""

    def __init__(self, engine: EngineHandle, controller: LabController, device: str,
                 visible_gpus: Callable[[], VisibleGpus] = find_gpus) -> None:
        self.engine = engine
        self.controller = controller
        self.device = device
        """The ``--device`` the lab measures on (``cuda:N`` once a GPU was chosen)."""
        self._find_gpus = visible_gpus
        self._visible_gpus: VisibleGpus | None = None

    @property
    def visible_gpus(self) -> VisibleGpus:
        """The GPUs CUDA sees from here: ``CUDA_VISIBLE_DEVICES`` cannot change while the app
        runs, so NVML is asked once, not at every key."""
        if self._visible_gpus is None:
            self._visible_gpus = self._find_gpus()
        return self._visible_gpus

    @property
    def watched_gpu(self) -> int | None:
        """The NVML GPU the panels show (None in CPU mode)."""
        return gpu_index(self.device, self.visible_gpus)

    @property
    def side_by_side(self) -> bool:
        """One engine per GPU (``--devices``)."""
        return isinstance(self.engine, EnginesPerGpu)

    @property
    def measuring_gpus(self) -> frozenset[int]:
        """GPUs an engine of ours measures on."""
        if isinstance(self.engine, EnginesPerGpu):
            return frozenset(self.engine.devices)
        return frozenset() if self.watched_gpu is None else frozenset({self.watched_gpu})

    def hidden_gpus(self, host: HostGpus) -> frozenset[int]:
        """GPUs the chooser offers but cannot measure on (hidden from CUDA here)."""
        if self.side_by_side:
            return frozenset()
        return hidden_gpus((g.index for g in host.gpus), self.visible_gpus)

    def results(self) -> tuple[GpuResult, ...] | None:
        """``--devices``: every measured GPU's numbers for the overview's table (None with one engine)."""
        if not isinstance(self.engine, EnginesPerGpu):
            return None
        sessions: dict[int | None, Session] = {i: s for i, s in self.controller.sessions_by_gpu.items()}
        sessions[self.watched_gpu] = self.controller.session
        return tuple(result_from_session(i, sessions[i]) if i in sessions else GpuResult(i, note="starting")
                     for i in self.engine.devices)

    def switch(self, index: int) -> Switched | StatusLine | None:
        """Show NVML GPU ``index`` from now on; the current GPU's session is kept. None when it is already shown;
        a :class:`StatusLine` saying why not when it cannot be."""
        if index == self.watched_gpu:
            return None
        if isinstance(self.engine, EnginesPerGpu):
            return self._show_other_engine(self.engine, index)
        try:
            device = cuda_device_of(index, self.visible_gpus)
        except DeviceError as exc:
            return StatusLine(f"cannot measure there: {exc}", error=True)
        previous = self.watched_gpu
        self.controller.move(index, previous)
        self.device = device
        self.engine.switch_device(device)
        kept = f"; GPU {previous}'s numbers are kept" if previous is not None else ""
        return Switched(index, f"engine restarting on GPU {index}",
                        StatusLine(f"measuring on GPU {index} now: the engine restarts there{kept}"), reconfigure=True)

    def _show_other_engine(self, engines: EnginesPerGpu, index: int) -> Switched | StatusLine:
        """``--devices``: show another GPU's engine in the panels; every engine keeps measuring."""
        if index not in engines.devices:
            measured = ",".join(map(str, engines.devices))
            return StatusLine(f"GPU {index} is not measured: start with --devices including it (now {measured})",
                              error=True)
        self.controller.show(index, self.watched_gpu)
        self.device = engines.cuda_devices[index]
        engines.switch_device(self.device)
        state = "" if self.controller.session.environment else f"engine starting on GPU {index}"
        return Switched(index, state, StatusLine(f"showing GPU {index}; every GPU keeps measuring"), reconfigure=False)
