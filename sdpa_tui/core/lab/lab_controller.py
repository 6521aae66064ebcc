"""What the lab measures, apart from the screen: the session of each GPU, the backend flags the user switched, the
dispatch priority, the legacy API and pause, and the :class:`Configure` each change sends the engine.

Each change returns a :class:`Change`: the words for the status line and the record for the engine (None when
nothing is to be measured anew). The app sends the record and draws; it holds no state of its own about these.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..backends import ALL_BACKENDS, Backend
from ..protocol.engine_commands import ENGINE_MEMORY_MIB, Configure
from ..workload import DTYPES, Workload, WorkloadError
from .session import Session

SAMPLE_INTERVAL_S = 0.25
"""Each enabled backend is sampled about four times a second while live."""
PROFILE_EVERY_S = 5.0
PROFILE_EVERY_MAX_S = 60.0
"""A kernel burst per backend 5 s after the first, then 10, 20, 40 and every 60 s while the
workload stays the same: its kernels do not change, and fewer profiler sessions are cheaper."""


@dataclass(frozen=True)
class Change:
    """What a key did: the status line's words, whether they report a refusal, and the engine's new configuration."""

    message: str
    error: bool = False
    configure: Configure | None = None


class LabController:
    """The lab's state and its changes (see the module's doc). ``session`` is the shown GPU's."""

    def __init__(self, session: Session, priority: tuple[Backend, ...] = (),
                 recycle_growth_mib: float = ENGINE_MEMORY_MIB) -> None:
        self.session = session
        self.sessions_by_gpu: dict[int, Session] = {}  # every other GPU's, kept with its history
        self.flags: set[Backend] = set(session.enabled)  # what the user switched on
        self.priority = priority  # a custom dispatch order; () is torch's
        self.recycle_growth_mib = recycle_growth_mib  # replace the engine once it grew this much
        self.paused = False

    # -- the engine's configuration ----------------------------------------------------------
    def configure_record(self) -> Configure:
        legacy = self.session.legacy_api
        flags = tuple(b for b in ALL_BACKENDS if b in self.flags and not (legacy and b is Backend.CUDNN))
        return Configure(
            self.session.next_config_id(), self.session.workload, flags,
            profile_every_s=PROFILE_EVERY_S, profile_every_max_s=PROFILE_EVERY_MAX_S,
            sample_interval_s=SAMPLE_INTERVAL_S, recycle_growth_mib=self.recycle_growth_mib,
            legacy_api=legacy, priority=() if legacy else self.priority,
        )

    def _flags_applied(self, message: str) -> Change:
        shown = set(self.flags) | ({Backend.CUDNN} if self.session.legacy_api else set())
        self.session.set_enabled(tuple(b for b in ALL_BACKENDS if b in shown))
        self.session.dispatch = None
        return Change(message, configure=self.configure_record())

    # -- keys ----------------------------------------------------------------------------------
    def toggle(self, backend: Backend) -> Change:
        if self.session.legacy_api and backend is Backend.CUDNN:
            return Change("the legacy API has no cuDNN switch: sdp_kernel(...) never touches it (press l to leave "
                          "legacy mode)", error=True)
        self.flags ^= {backend}
        return self._flags_applied(f"{backend.label} flag {'on' if backend in self.flags else 'off'}")

    def toggle_legacy(self) -> Change:
        self.session.legacy_api = not self.session.legacy_api
        if self.session.legacy_api:
            return self._flags_applied("legacy API: flags set through torch.backends.cuda.sdp_kernel(), which has no "
                                       "cuDNN switch")
        return self._flags_applied("flags applied with torch.nn.attention.sdpa_kernel (cuDNN has its own switch again)")

    def rotate_priority(self) -> Change:
        if self.session.legacy_api:
            return Change("the legacy API has no priority order (press l to leave legacy mode)", error=True)
        d = self.session.dispatch
        current = self.priority or (tuple(Backend(n) for n in d.priority_order) if d and d.priority_order
                                    else ALL_BACKENDS)
        self.priority = current[1:] + current[:1]
        return self._flags_applied("priority: " + " > ".join(b.label for b in self.priority)
                                   + " (sdpa_kernel set_priority=True)")

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        return self.paused

    # -- the workload ----------------------------------------------------------------------------
    def set_workload(self, workload: Workload) -> Change | None:
        """None when it is the workload already measured."""
        if workload == self.session.workload:
            return None
        self.session.set_workload(workload)
        return Change(f"workload: {workload.describe()}", configure=self.configure_record())

    def edit(self, **changes: Any) -> Change | None:
        try:
            return self.set_workload(self.session.workload.with_changes(**changes))
        except WorkloadError as exc:
            return Change(f"not changed: {exc}", error=True)

    def scale_seq(self, factor: float) -> Change | None:
        w = self.session.workload
        seq = max(1, int(w.seq * factor))
        return self.edit(seq=seq, kv_seq=seq if w.kv_seq == w.seq else w.kv_seq)

    def cycle_dtype(self) -> Change | None:
        names = list(DTYPES)
        return self.edit(dtype=names[(names.index(self.session.workload.dtype) + 1) % len(names)])

    def toggle_causal(self) -> Change | None:
        return self.edit(mask="none" if self.session.workload.causal else "causal")

    def toggle_direction(self) -> Change | None:
        return self.edit(direction="fwd" if self.session.workload.backward else "fwd+bwd")

    # -- GPUs ------------------------------------------------------------------------------------
    def session_of(self, index: int) -> Session:
        """GPU ``index``'s session (``--devices``), following the shown one's workload, flags and config id."""
        session = self.sessions_by_gpu.get(index)
        if session is None:
            session = self.sessions_by_gpu[index] = Session(self.session.workload, self.session.enabled)
        current = self.session
        if session is not current and session.config_id != current.config_id:
            _follow(session, current, current.config_id)
        return session

    def show(self, index: int, shown: int | None) -> None:
        """``--devices``: GPU ``index``'s session is shown from now on; ``shown``'s is kept."""
        new = self.session_of(index)
        if shown is not None:
            self.sessions_by_gpu[shown] = self.session
        self.session = new

    def move(self, index: int, previous: int | None) -> None:
        """One engine moves to GPU ``index``: that GPU's session (kept, or new) takes the current workload, flags
        and legacy mode; ``previous``'s is kept with its history. Records in flight for the old GPU are ignored."""
        old = self.session
        if previous is not None:
            self.sessions_by_gpu[previous] = old
        new = self.sessions_by_gpu.get(index) or Session(old.workload, old.enabled)
        _follow(new, old, max(new.config_id, old.config_id))
        self.session = new


def _follow(session: Session, current: Session, config_id: int) -> None:
    """``session`` takes ``current``'s workload, flags and legacy mode, and ``config_id``; its pick is asked again."""
    session.legacy_api = current.legacy_api
    session.set_workload(current.workload)
    if session.enabled != current.enabled:
        session.set_enabled(current.enabled)
    session.config_id = config_id
    session.dispatch = None
