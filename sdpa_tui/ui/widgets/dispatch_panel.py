"""The dispatch panel: with the flags as they are, what SDPA picks, and how fast it is."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ...core.backends import Backend
from ...core.session import Session
from .backend_panel import fmt_time


class DispatchPanel(Static):
    def on_mount(self) -> None:
        self.border_title = "Dispatch"

    _shown: tuple | None = None

    def show(self, session: Session) -> None:
        d = session.dispatch
        pick = session.backends[d.choice].version if d and d.choice else None
        key = (d, session.enabled, pick, tuple(s.version for s in session.backends.values()) if d and not d.choice else None)
        if key == self._shown:
            return
        self._shown = key
        text = Text()
        flags = " ".join(
            f"{b.short}={'on' if b in session.enabled else 'off'}" for b in Backend
        )
        text.append("flags ", style="bold")
        text.append(flags + "\n")
        if d is None:
            text.append("asking torch…", style="yellow")
            self.update(text, layout=False)
            return
        if d.choice is None:
            text.append("No available kernel", style="bold red")
            text.append(f": {d.reason}\n" if d.reason else "\n")
            for backend in Backend:
                state = session.backends[backend]
                why = state.reason or state.status
                text.append(f"  {backend.label}: {why}\n", style="red" if state.enabled else "dim")
        else:
            state = session.backends[d.choice]
            gpu, eager = state.gpu.summary(), state.eager.summary()
            text.append("SDPA picks ", style="bold")
            text.append(d.choice.label, style="bold green")
            text.append(f"   GPU/call {fmt_time(gpu.median if gpu else None)}  eager {fmt_time(eager.median if eager else None)}\n")
        if d.priority_order:
            order = " > ".join(Backend(name).label for name in d.priority_order)
            text.append("priority ", style="bold")
            text.append(order)
        self.update(text, layout=False)
