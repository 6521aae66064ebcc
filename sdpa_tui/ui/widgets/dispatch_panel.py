"""The dispatch panel: with the flags as they are, what SDPA picks, and why not the others."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ...core.backends import ALL_BACKENDS, Backend
from ...core.lab.faster import CLOCK_LABEL, Faster
from ...core.lab.report_model import ReportModel
from ...core.lab.session import Session
from ...core.units import duration

SCROLLBAR_WIDTH = 2
"""Textual's vertical scrollbar: a backend's line leaves room for it, or it would wrap once the panel scrolls."""


def first_sentence(text: str) -> str:
    """Torch's messages go on ("This is likely due to ..."): the panel has room for the first sentence."""
    head, sep, _ = text.partition(". ")
    return head + ("." if sep else "")


def why_not(session: Session, backend: Backend, pick: Backend | None, order: list[Backend]) -> str:
    """One line on why SDPA did not use ``backend``: its flag, its eligibility, or the priority."""
    state = session.backends[backend]
    eligible, reason = state.eligibility, state.eligibility_reason
    if not state.enabled:
        if eligible == "ok":
            return "flag off (it could run this workload)"
        return f"flag off; not eligible either: {reason}" if reason else "flag off"
    if not eligible:  # the engine has not checked it yet: nothing is known
        return "checking…"
    if eligible != "ok":
        return f"not eligible: {first_sentence(reason)}" if reason else eligible.replace("_", " ")
    if pick is not None and pick in order and backend in order and order.index(backend) > order.index(pick):
        return f"eligible, but {pick.label} comes first in the priority order"
    return "eligible"


def _fitting(width: int, *candidates: str) -> str:
    """The first candidate that fits in ``width`` columns, else the last (it wraps)."""
    return next((c for c in candidates if len(c) <= width), candidates[-1])


def faster_text(faster: tuple[Faster, ...], width: int) -> Text:
    """Two lines: the backend that beats SDPA's pick, by how much, and how to get it.

    As much as fits in ``width``: at 80x24 the panel has 36 columns, and the pick's own median
    is on the line above.
    """
    f = faster[0]
    label, clock = f.backend.label, CLOCK_LABEL.get(f.clock, f.clock)
    ratio = f"{f.ratio:.2f}x"
    line = _fitting(
        width,
        f"▲ faster: {label} {ratio} ({duration(f.median)} vs {duration(f.pick_median)} {clock})",
        f"▲ {label} {ratio} faster: {duration(f.median)} vs {duration(f.pick_median)}",
        f"{label} {ratio} faster: {duration(f.median)}",
    )
    others = "".join(f", {o.backend.label} {o.ratio:.2f}x" for o in faster[1:])
    if len(line + others) <= width:
        line += others
    how = _fitting(
        width,
        f"get it: with sdpa_kernel([SDPBackend.{f.backend.value}]):",
        f"get it: sdpa_kernel([SDPBackend.{f.backend.value}])",
        f"→ sdpa_kernel([{f.backend.value}])",
    )
    return Text.assemble((line, "bold yellow"), "\n", how)


class DispatchPanel(Static):
    _shown: tuple | None = None
    _text: Text | None = None

    def _put(self, text: Text) -> None:
        """Redraw only when the text changed: a new sample often leaves the medians shown as they were."""
        if text != self._text:
            self._text = text
            self.update(text, layout=False)

    def on_mount(self) -> None:
        self.border_title = "Dispatch"

    def show(self, model: ReportModel) -> None:
        session = model.session
        d = session.dispatch
        faster = model.faster
        width = self.content_region.width or self.size.width
        key = (d, session.enabled, session.legacy_api, faster, width, tuple(s.version for s in session.backends.values()))
        if key == self._shown:
            return
        self._shown = key
        text = Text()
        text.append("legacy sdp_kernel " if session.legacy_api else "flags ", style="bold")
        text.append(" ".join(f"{b.short}{'✓' if b in session.enabled else '✗'}" for b in ALL_BACKENDS))
        if d is None:
            text.append("\nasking torch…", style="yellow")
            self._put(text)
            return
        order = [Backend(name) for name in d.priority_order]
        if d.choice is None:
            text.append("\nNo available kernel", style="bold red")
            text.append(f": {first_sentence(d.reason)}" if d.reason else "")
        else:
            state = session.backends[d.choice]
            gpu, eager = state.gpu.summary(), state.eager.summary()
            text.append("\nSDPA picks ", style="bold")
            text.append(d.choice.label, style="bold green")
            text.append(f"   GPU/call {duration(gpu.median if gpu else None)}   eager {duration(eager.median if eager else None)}")
            if faster:
                text.append("\n")
                text.append_text(faster_text(faster, width))
        if order:
            text.append("\npriority ", style="bold")
            text.append(" > ".join(b.label for b in order))
        if d.note:
            text.append(f"\n{d.note}", style="yellow")
        for backend in ALL_BACKENDS:  # one line each, cut with an ellipsis: the full reason is in its panel
            if backend != d.choice:
                line = Text(no_wrap=True, overflow="ellipsis", end="")
                line.append(f"{backend.label}: ", style="bold")
                line.append(why_not(session, backend, d.choice, order), style="dim")
                line.truncate(max(width - SCROLLBAR_WIDTH, 20), overflow="ellipsis")
                text.append("\n")
                text.append_text(line)
        self._put(text)
