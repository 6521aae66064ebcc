"""The app's side of "every GPU of the host": the overview, ``g`` to switch GPUs, history per GPU.

:class:`GpuSwitching` is mixed into the app. The NVML reading of all GPUs arrives as
:class:`HostGpusUpdate`; the watched GPU's own reading still goes to the GPU panel as a
``GpuUpdate``. Switching keeps each GPU's :class:`Session` (its numbers and history) and
restarts the engine on the new GPU through the supervisor's ``switch_device``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.lab.across_gpus import GpuResult, result_from_session
from ..core.lab.lab_controller import LabController
from ..core.lab.session import Session
from ..core.protocol.engine_handle import EngineHandle, EnginesPerGpu
from ..telemetry.device_choice import DeviceError, VisibleGpus, cuda_device_of, find_gpus, gpu_index, hidden_gpus
from ..telemetry.gpu_snapshot import GpuSnapshot
from ..telemetry.host_gpus import HostGpuPoller, HostGpus
from .messages import DeviceEvent, DeviceRecords, EngineEvent, EngineRecords, HostGpusUpdate
from .screens.gpu_chooser import GpuChooser
from .widgets.gpu_overview import GpuOverview

if TYPE_CHECKING:
    from textual.screen import Screen

NVML_INTERVAL_S = 1.0
OWN_PIDS_EVERY_S = 2.0
TABLE_REDRAW_S = 0.5
"""``--devices``: the side-by-side table is redrawn at most this often (records come from every engine)."""


class GpuSwitching:
    """Mixin for the app: ``host_gpus``, ``watched_gpu`` and the ``g`` action (every GPU's session is the
    controller's)."""

    # set by the app
    controller: LabController
    engine: EngineHandle
    device: str
    session: Session
    gpu: GpuSnapshot | None
    engine_state: str
    _dirty: bool

    if TYPE_CHECKING:
        @property
        def main_screen(self) -> Screen: ...

        def status(self, text: str, error: bool = False) -> None: ...

        def while_open(self, redraw: Callable[[], None]) -> None: ...

        def _reconfigure(self) -> None: ...  # ConfigurationKeys's

        def on_engine_records(self, message: EngineRecords) -> None: ...  # BackgroundInput's

        def on_engine_event(self, message: EngineEvent) -> None: ...  # BackgroundInput's

        def set_timer(self, delay: float, callback: Callable[[], None]) -> Any: ...  # Textual's

        def push_screen(self, screen: Screen, callback: Any = None) -> Any: ...  # Textual's

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.host_gpus: HostGpus | None = None
        self._gpus_redraw_pending = False
        self._visible_gpus: VisibleGpus | None = None

    @property
    def visible_gpus(self) -> VisibleGpus:
        """The GPUs CUDA sees from here: ``CUDA_VISIBLE_DEVICES`` cannot change while the app
        runs, so NVML is asked once, not at every key."""
        if self._visible_gpus is None:
            self._visible_gpus = find_gpus()
        return self._visible_gpus

    @property
    def watched_gpu(self) -> int | None:
        """The NVML GPU the panels show (None in CPU mode)."""
        return gpu_index(self.device, self.visible_gpus)

    @property
    def measuring_gpus(self) -> frozenset[int]:
        """GPUs an engine of ours measures on."""
        if isinstance(self.engine, EnginesPerGpu):
            return frozenset(self.engine.devices)
        return frozenset() if self.watched_gpu is None else frozenset({self.watched_gpu})

    @property
    def side_by_side(self) -> bool:
        """One engine per GPU (``--devices``)."""
        return isinstance(self.engine, EnginesPerGpu)

    def on_host_gpus_update(self, message: HostGpusUpdate) -> None:
        self.host_gpus = message.host
        self.while_open(self._show_gpus)  # the poller's thread posts readings until it stops: one may come late

    def _show_gpus(self) -> None:
        results = None
        if self.side_by_side:
            sessions = {**self.controller.sessions_by_gpu, self.watched_gpu: self.session}
            results = tuple(result_from_session(i, sessions[i]) if i in sessions else GpuResult(i, note="starting")
                            for i in self.engine.devices)
        self.main_screen.query_one(GpuOverview).show(self.host_gpus, self.watched_gpu, self.measuring_gpus, results)

    # -- --devices: records of every engine ------------------------------------------------
    def on_device_records(self, message: DeviceRecords) -> None:
        if message.index == self.watched_gpu:
            self.on_engine_records(EngineRecords(message.records))
        else:
            session = self.controller.session_of(message.index)
            for record in message.records:
                session.apply(record)
        if not self._gpus_redraw_pending:  # at most one table redraw per interval
            self._gpus_redraw_pending = True
            self.set_timer(TABLE_REDRAW_S, self._redraw_gpus)

    def _redraw_gpus(self) -> None:
        self._gpus_redraw_pending = False
        self.while_open(self._show_gpus)

    def on_device_event(self, message: DeviceEvent) -> None:
        if message.index == self.watched_gpu:
            self.on_engine_event(EngineEvent(message.event))

    def action_choose_gpu(self) -> None:
        host = self.host_gpus
        if host is None or host.count == 0:
            why = host.reason if host else "NVML has not answered yet"
            self.status(f"no GPU to choose: {why}", error=True)
            return
        hidden = frozenset() if self.side_by_side else hidden_gpus((g.index for g in host.gpus), self.visible_gpus)
        self.push_screen(GpuChooser(host, self.watched_gpu, self.measuring_gpus, hidden), self.switch_gpu)

    def switch_gpu(self, index: int | None) -> None:
        """Measure on NVML GPU ``index`` from now on; the current GPU's session is kept."""
        if index is None or index == self.watched_gpu:
            return
        if self.side_by_side:
            self._show_other_engine(index)
            return
        try:
            device = cuda_device_of(index, self.visible_gpus)
        except DeviceError as exc:
            self.status(f"cannot measure there: {exc}", error=True)
            return
        previous = self.watched_gpu
        self.controller.move(index, previous)
        self.device = device
        self.gpu = self.host_gpus.get(index) if self.host_gpus else None
        self.engine.switch_device(self.device)
        self.engine_state = f"engine restarting on GPU {index}"
        self._reconfigure()
        kept = f"; GPU {previous}'s numbers are kept" if previous is not None else ""
        self.status(f"measuring on GPU {index} now: the engine restarts there{kept}")
        self._show_gpus()


    def _show_other_engine(self, index: int) -> None:
        """``--devices``: show another GPU's engine in the panels; every engine keeps measuring."""
        if index not in self.engine.devices:
            measured = ",".join(map(str, self.engine.devices))
            self.status(f"GPU {index} is not measured: start with --devices including it (now {measured})", error=True)
            return
        self.controller.show(index, self.watched_gpu)
        new = self.session
        self.device = self.engine.cuda_devices[index]
        self.gpu = self.host_gpus.get(index) if self.host_gpus else None
        self.engine.switch_device(self.device)
        self.engine_state = "" if new.environment else f"engine starting on GPU {index}"
        self.status(f"showing GPU {index}; every GPU keeps measuring")
        self._dirty = True
        self._show_gpus()


def host_gpu_source(app: Any, interval: float = NVML_INTERVAL_S) -> Callable[[Callable[[GpuSnapshot], None]], Any]:
    """``gpu_source`` for the app: one poller reads every GPU; the watched one also goes to the
    GPU panel. Our engine processes are not counted as other processes."""

    def start(deliver: Callable[[GpuSnapshot], None]) -> Any:
        def on_host(host: HostGpus) -> None:
            app.post_message(HostGpusUpdate(host))
            index = app.watched_gpu
            if index is None:
                deliver(GpuSnapshot.unavailable("on the CPU: no GPU is watched"))
            else:
                deliver(host.get(index) or GpuSnapshot.unavailable(host.reason or f"NVML has no GPU {index}", index))

        poller = HostGpuPoller(on_host, interval=interval)
        poller.start()

        def own_pids() -> None:
            poller.own_pids = app.engine.engine_pids

        app.set_interval(OWN_PIDS_EVERY_S, own_pids)
        return poller

    return start
