"""The keys that change what the lab measures: backend flags, the legacy API, the dispatch
priority and the workload; and the :class:`Configure` record each change sends to the engine.

:class:`ConfigurationKeys` is mixed into the app (as :class:`~.gpu_switching.GpuSwitching` is).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.backends import ALL_BACKENDS, Backend
from ..core.engine_commands import Configure
from ..core.engine_handle import EngineHandle
from ..core.session import Session
from ..core.workload import DTYPES, Workload, WorkloadError
from .screens.workload_form import WorkloadForm

if TYPE_CHECKING:
    from textual.screen import Screen

SAMPLE_INTERVAL_S = 0.25
"""Each enabled backend is sampled about four times a second while live."""
PROFILE_EVERY_S = 5.0
PROFILE_EVERY_MAX_S = 60.0
"""A kernel burst per backend 5 s after the first, then 10, 20, 40 and every 60 s while the
workload stays the same: its kernels do not change, and fewer profiler sessions are cheaper."""


class ConfigurationKeys:
    """Mixin for the app: the flag, legacy, priority and workload keys, and ``set_workload``."""

    # set by the app
    session: Session
    engine: EngineHandle
    flags: set[Backend]  # what the user switched on
    priority: tuple[Backend, ...]  # a custom dispatch order; () is torch's
    recycle_growth_mib: float  # replace the engine once it grew this much
    _dirty: bool

    if TYPE_CHECKING:
        def status(self, text: str, error: bool = False) -> None: ...

        def push_screen(self, screen: Screen, callback: Any = None) -> Any: ...

    def _configure_record(self) -> Configure:
        legacy = self.session.legacy_api
        flags = tuple(b for b in ALL_BACKENDS if b in self.flags and not (legacy and b is Backend.CUDNN))
        return Configure(
            self.session.next_config_id(), self.session.workload, flags,
            profile_every_s=PROFILE_EVERY_S, profile_every_max_s=PROFILE_EVERY_MAX_S,
            sample_interval_s=SAMPLE_INTERVAL_S, recycle_growth_mib=self.recycle_growth_mib,
            legacy_api=legacy, priority=() if legacy else self.priority,
        )

    def _apply_flags(self) -> None:
        shown = set(self.flags) | ({Backend.CUDNN} if self.session.legacy_api else set())
        self.session.set_enabled(tuple(b for b in ALL_BACKENDS if b in shown))
        self.session.dispatch = None
        self._reconfigure()

    def _reconfigure(self) -> None:
        self.engine.configure(self._configure_record())
        self._dirty = True

    def action_toggle(self, backend_name: str) -> None:
        backend = Backend(backend_name)
        if self.session.legacy_api and backend is Backend.CUDNN:
            self.status("the legacy API has no cuDNN switch: sdp_kernel(...) never touches it (press l to leave legacy mode)",
                        error=True)
            return
        self.flags ^= {backend}
        self.status(f"{backend.label} flag {'on' if backend in self.flags else 'off'}")
        self._apply_flags()

    def action_toggle_legacy(self) -> None:
        self.session.legacy_api = not self.session.legacy_api
        if self.session.legacy_api:
            self.status("legacy API: flags applied as torch.backends.cuda.sdp_kernel(enable_flash, enable_math, "
                        "enable_mem_efficient); it has no cuDNN switch")
        else:
            self.status("flags applied with torch.nn.attention.sdpa_kernel (cuDNN has its own switch again)")
        self._apply_flags()

    def action_rotate_priority(self) -> None:
        if self.session.legacy_api:
            self.status("the legacy API has no priority order (press l to leave legacy mode)", error=True)
            return
        d = self.session.dispatch
        current = self.priority or (tuple(Backend(n) for n in d.priority_order) if d and d.priority_order else ALL_BACKENDS)
        self.priority = current[1:] + current[:1]
        self.status("priority: " + " > ".join(b.label for b in self.priority) + " (sdpa_kernel set_priority=True)")
        self._apply_flags()

    def set_workload(self, workload: Workload) -> None:
        if workload == self.session.workload:
            return
        self.session.set_workload(workload)
        self.status(f"workload: {workload.describe()}")
        self._reconfigure()

    def _edit(self, **changes: Any) -> None:
        try:
            self.set_workload(self.session.workload.with_changes(**changes))
        except WorkloadError as exc:
            self.status(f"not changed: {exc}", error=True)

    def action_scale_seq(self, factor: float) -> None:
        w = self.session.workload
        same_kv = w.kv_seq == w.seq
        seq = max(1, int(w.seq * factor))
        self._edit(seq=seq, kv_seq=seq if same_kv else w.kv_seq)

    def action_cycle_dtype(self) -> None:
        names = list(DTYPES)
        self._edit(dtype=names[(names.index(self.session.workload.dtype) + 1) % len(names)])

    def action_toggle_causal(self) -> None:
        self._edit(mask="none" if self.session.workload.causal else "causal")

    def action_toggle_direction(self) -> None:
        self._edit(direction="fwd" if self.session.workload.backward else "fwd+bwd")

    def action_edit_workload(self) -> None:
        def done(workload: Workload | None) -> None:
            if workload is not None:
                self.set_workload(workload)

        self.push_screen(WorkloadForm(self.session.workload), done)
