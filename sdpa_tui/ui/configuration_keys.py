"""The keys that change what the lab measures: backend flags, the legacy API, the dispatch priority and the
workload. The state and the :class:`Configure` each change sends live in :class:`~..core.lab_controller.LabController`;
this mixin turns keys into its calls, sends what it returns and says it on the status line.

:class:`ConfigurationKeys` is mixed into the app (as :class:`~.gpu_switching.GpuSwitching` is).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.backends import Backend
from ..core.lab.lab_controller import Change, LabController
from ..core.lab.session import Session
from ..core.protocol.engine_handle import EngineHandle
from ..core.workload import Workload
from .screens.workload_form import WorkloadForm

if TYPE_CHECKING:
    from textual.screen import Screen


class ConfigurationKeys:
    """Mixin for the app: the flag, legacy, priority and workload keys, and ``set_workload``."""

    # set by the app
    controller: LabController
    session: Session
    engine: EngineHandle
    _dirty: bool

    if TYPE_CHECKING:
        def status(self, text: str, error: bool = False) -> None: ...

        def push_screen(self, screen: Screen, callback: Any = None) -> Any: ...

    def _apply(self, change: Change | None) -> None:
        if change is None:
            return
        if change.configure is not None:
            self.engine.configure(change.configure)
            self._dirty = True
        self.status(change.message, error=change.error)

    def _reconfigure(self) -> None:
        """Send the current configuration again (a new engine, another GPU)."""
        self.engine.configure(self.controller.configure_record())
        self._dirty = True

    def action_toggle(self, backend_name: str) -> None:
        self._apply(self.controller.toggle(Backend(backend_name)))

    def action_toggle_legacy(self) -> None:
        self._apply(self.controller.toggle_legacy())

    def action_rotate_priority(self) -> None:
        self._apply(self.controller.rotate_priority())

    def set_workload(self, workload: Workload) -> None:
        self._apply(self.controller.set_workload(workload))

    def action_scale_seq(self, factor: float) -> None:
        self._apply(self.controller.scale_seq(factor))

    def action_cycle_dtype(self) -> None:
        self._apply(self.controller.cycle_dtype())

    def action_toggle_causal(self) -> None:
        self._apply(self.controller.toggle_causal())

    def action_toggle_direction(self) -> None:
        self._apply(self.controller.toggle_direction())

    def action_edit_workload(self) -> None:
        def done(workload: Workload | None) -> None:
            if workload is not None:
                self.set_workload(workload)

        self.push_screen(WorkloadForm(self.session.workload), done)
