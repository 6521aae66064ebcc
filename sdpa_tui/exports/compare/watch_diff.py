"""``sdpa-tui compare`` of two ``watch --report`` files: per call site, the backend, the time per call and the advice
in A and in B, and the run's SDPA time and possible saving, in lines that fit a terminal, Markdown or JSON.

Calls are paired by their site (file name and line: a program moved to another folder still pairs) and whether they
ran compiled; where one site made several signatures, by the whole signature too. A change the advice asked for
(``is_causal=True``, K/V expanded, a padded head dim) keeps its site, so the row shows its effect. The time is the
kernel clock (CUPTI) where both sides have it, else the host clock, and says which.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from ...core.calls.call_signature import CallSignature
from ...core.calls.gradient_check import BLAME_UPSTREAM, GRADIENTS
from ...core.calls.watch_report import CONTENDED_MARK, backend_label
from ...core.calls.watched_calls import OutputCheck
from ...core.units import us_number
from ..plain_table import fitted_rows, wrapped


def is_watch_report(document: Any) -> bool:
    return isinstance(document, dict) and isinstance(document.get("calls"), list) and "program" in document


def _site(call: dict) -> str:
    file, _, line = str(call.get("site") or "?").rpartition(":")
    return f"{Path(file).name}:{line}" if file else str(call.get("site"))


def _signature(call: dict) -> CallSignature:
    """A row of ``calls[]`` back as its signature (the row writes the mask as ``{"kind", "shape"}``)."""
    mask = call.get("mask") or {}
    return CallSignature.from_dict({**call, "device": call.get("device", ""), "mask": mask.get("kind") or "none",
                                    "mask_shape": mask.get("shape")})


def _keys(calls: list[dict]) -> list[tuple]:
    short = [(_site(c), bool(c.get("compiled"))) for c in calls]
    seen = Counter(short)
    return [k if seen[k] == 1 else (*k, _signature(c)) for k, c in zip(short, calls)]


def _median(call: dict | None, clock: str) -> float | None:
    return ((call or {}).get(f"{clock}_us") or {}).get("median")


def _best(call: dict | None) -> str | None:
    best = (call or {}).get("best")
    if not best:
        return None
    return best["backend"] if best.get("variant") == "backend" else f"{best['variant']} ({best['backend']})"


@dataclass(frozen=True)
class CheckVerdict:
    """A call's sampled checks in a word or two: ``ok``, what failed (``dq NaN/Inf``, ``output off``), or where a
    non-finite gradient came from when it was not the backend (``upstream grad NaN/Inf``: not a failure of SDPA)."""

    text: str
    failed: bool = False

    def __str__(self) -> str:
        return self.text


def check_verdict(call: dict | None) -> CheckVerdict | None:
    """None when nothing of the call was checked."""
    if call is None or not call.get("check"):
        return None
    check = OutputCheck.from_dict(call["check"])
    back = check.backward
    failed = []
    if check.ok is False:
        failed.append("output NaN/Inf" if check.nonfinite else "output off")
    if back is not None and back.backend_nonfinite:
        failed.append("/".join(g for g in GRADIENTS if back.nonfinite.get(g)) + " NaN/Inf")
    elif back is not None and back.out_of_tolerance:
        failed.append("gradients off")
    if failed:
        return CheckVerdict(", ".join(failed), failed=True)
    if back is not None and back.blame:  # the program's own gradients or inputs, not the backend
        return CheckVerdict("upstream grad NaN/Inf" if back.blame == BLAME_UPSTREAM else "inputs NaN/Inf")
    return CheckVerdict("ok") if check.samples or (back is not None and back.samples) else None


def _work(call: dict | None) -> tuple | None:
    """What a call computes, whatever the advice changed (the mask, K/V heads, head dim, dtype): batch, query heads
    and length, key length."""
    if call is None:
        return None
    return tuple(call.get("q_shape") or ())[:-1], tuple(call.get("kv_shape") or ())[-2:-1]


@dataclass(frozen=True)
class CallChange:
    site: str
    signature: CallSignature  # B's where both have it
    compiled: bool
    backend: tuple[str | None, str | None]
    count: tuple[int | None, int | None]
    clock: str  # "kernel" | "host"
    us: tuple[float | None, float | None]
    best: tuple[str | None, str | None]
    saving_us_per_call: tuple[float | None, float | None]
    same_work: bool = True  # A and B ran the same batch, heads and lengths here: their times compare
    check: tuple[CheckVerdict | None, CheckVerdict | None] = (None, None)  # each side's sampled checks
    contended: tuple[bool, bool] = (False, False)  # each side's calls ran on a host busy beyond the program

    @property
    def paired(self) -> bool:
        return None not in self.count

    @property
    def ratio(self) -> float | None:
        a, b = self.us
        return b / a if a and b is not None and self.same_work else None

    def slower(self, threshold: float) -> bool:
        return self.ratio is not None and self.ratio > 1.0 + threshold

    @property
    def check_failed(self) -> bool:
        """B's outputs or gradients failed a check that A's did not (or A did not run)."""
        a, b = self.check
        return b is not None and b.failed and not (a is not None and a.failed)


def _change(a: dict | None, b: dict | None) -> CallChange:
    both = [c for c in (a, b) if c is not None]
    clock = "kernel" if all(_median(c, "kernel") is not None for c in both) else "host"

    def pair(key: str) -> tuple:
        return (a or {}).get(key), (b or {}).get(key)

    return CallChange(_site(both[-1]), _signature(both[-1]), bool(both[-1].get("compiled")),
                      pair("backend"), pair("count"), clock, (_median(a, clock), _median(b, clock)),
                      (_best(a), _best(b)), pair("saving_us_per_call"), a is None or b is None or _work(a) == _work(b),
                      (check_verdict(a), check_verdict(b)),
                      (bool((a or {}).get("contended")), bool((b or {}).get("contended"))))


@dataclass(frozen=True)
class WatchComparison:
    a_path: str
    b_path: str
    threshold: float
    calls: tuple[CallChange, ...]
    sdpa_us: tuple[float | None, float | None]  # the run's SDPA time at the lab's clocks (the advice's summary)
    saving_us: tuple[float | None, float | None]  # what the top changes would save
    contention: tuple[str, str] = ("", "")  # each run's busiest interval in words, where the host was busy beyond it

    @property
    def regressed(self) -> bool:
        """A call site slower in B beyond the threshold, or whose check fails in B and did not in A."""
        return any(c.slower(self.threshold) or c.check_failed for c in self.calls)

    @property
    def not_comparable(self) -> str:
        """Why no time of A can be set against B's ("" when some can): no site in both, or other shapes at each."""
        paired = [c for c in self.calls if c.paired]
        if not paired:
            return f"no call site of {self.a_path} is in {self.b_path}: other programs, or other code"
        if not any(c.same_work for c in paired):
            return (f"every call site of {self.a_path} ran other shapes in {self.b_path} (batch, heads or sequence "
                    "lengths): the workloads differ")
        return ""


def compare_watch_reports(a: dict, b: dict, threshold: float, a_path: str = "A", b_path: str = "B") -> WatchComparison:
    in_a = dict(zip(_keys(a["calls"]), a["calls"]))
    in_b = dict(zip(_keys(b["calls"]), b["calls"]))
    order = list(in_a) + [k for k in in_b if k not in in_a]
    advice = [(d.get("advice") or {}) for d in (a, b)]
    return WatchComparison(a_path, b_path, threshold, tuple(_change(in_a.get(k), in_b.get(k)) for k in order),
                           (advice[0].get("sdpa_us"), advice[1].get("sdpa_us")),
                           (advice[0].get("saving_us"), advice[1].get("saving_us")),
                           (a.get("contention") or "", b.get("contention") or ""))


# -- views --------------------------------------------------------------------------------------------------------
COLUMNS = ("site", "call", "backend", "count", "µs per call", "check", "best (advice)", "saving µs/call")
"""The Markdown table's; a terminal's splits the time into the pair and ``B/A``, and says the advice under a row."""


def _pair(values: tuple[Any, Any], text=str, marks: tuple[str, str] = ("", "")) -> str:
    a, b = ("–" if v is None else text(v) + mark for v, mark in zip(values, marks))
    return a if a == b else f"{a} → {b}"


def _us(change: CallChange) -> str:
    if not change.same_work:
        return "other shapes: not compared"
    return _pair(change.us, us_number, tuple(CONTENDED_MARK if busy else "" for busy in change.contended))


SLOWER_MARK = "▲"
"""Marks a call site slower in B beyond the threshold, seen without colour (a pipe, a log, a captured pane): after B/A
in Markdown, on a line under the site in a terminal's view."""


def _ratio(change: CallChange, threshold: float | None = None) -> str:
    """B/A; marked where B is slower beyond ``threshold``, if given."""
    if change.ratio is None:
        return ""
    slower = threshold is not None and change.slower(threshold)
    return f"{change.ratio:.2f}x" + (f" {SLOWER_MARK}" if slower else "")


def _time(change: CallChange, threshold: float) -> str:
    ratio = f" ({_ratio(change, threshold)})" if change.ratio is not None else ""
    return _us(change) + ratio + ("" if change.clock == "kernel" or not change.same_work else " host")


def _cells(change: CallChange, threshold: float) -> list[str]:
    return [change.site + (" (compiled)" if change.compiled else ""), change.signature.describe(), _pair(change.backend),
            _pair(change.count), _time(change, threshold), _pair(change.check), _pair(change.best),
            _pair(change.saving_us_per_call, us_number)]


def _summary(comparison: WatchComparison) -> str:
    slower = [c for c in comparison.calls if c.slower(comparison.threshold)]
    broke = [c for c in comparison.calls if c.check_failed]
    failing = f"; {len(broke)} call site(s) whose outputs or gradients fail their check in B" if broke else ""
    busy = [f"in {side}, {text or 'the host was busy beyond the program'}"
            for i, (side, text) in enumerate(zip("AB", comparison.contention))
            if any(c.contended[i] for c in comparison.calls)]
    contended = f"; {CONTENDED_MARK} measured {' and '.join(busy)}: those times may read high" if busy else ""
    return (f"SDPA time over the run (the lab's clocks): {_pair(comparison.sdpa_us, us_number)} µs; "
            f"the advice's saving: {_pair(comparison.saving_us, us_number)} µs; "
            + (f"{len(slower)} call site(s) slower in B by more than {comparison.threshold:.0%} ({SLOWER_MARK})" if slower
               else f"no call site slower in B by more than {comparison.threshold:.0%}") + failing + contended)


def _terminal_us(change: CallChange, mixed: bool) -> str:
    """The time pair, ``host`` after it where rows of both clocks are listed; two runs of other shapes in two words
    (the summary says why they are not compared)."""
    if not change.same_work:
        return "other shapes"
    return _us(change) + (" host" if mixed and change.clock == "host" else "")


def _best_label(best: str) -> str:
    """``FLASH_ATTENTION`` → ``Flash``; ``is_causal (CUDNN_ATTENTION)`` → ``is_causal (cuDNN)``."""
    variant, _, backend = best.rpartition(" (")
    return f"{variant} ({backend_label(backend[:-1])})" if variant else backend_label(best)


def _clock_line(comparison: WatchComparison) -> str:
    clocks = {c.clock for c in comparison.calls if c.same_work}
    if clocks == {"host"}:
        return "µs per call: medians on the host's clock (one run or both without the GPU's kernel clock), A → B"
    if clocks == {"kernel"}:
        return "µs per call: medians of the GPU's kernels (CUPTI), A → B"
    return "µs per call: medians of the GPU's kernels (CUPTI), or on the host's clock where it says host, A → B"


INDENT = "    "
SHORT_CHECK = 8
"""A check column where every cell is this short (``ok``); longer verdicts go on a line under their row."""


def watch_comparison_lines(comparison: WatchComparison, width: int) -> list[tuple[str, bool]]:
    """The comparison for a terminal or a pipe, each line with whether it belongs to a call site that regressed: a
    line per call site in ``watch --report``'s words (the site's file and line, the call's brief form, backends by
    their labels) that fits ``width`` from 80 columns on, only the call's words wrapping and no number cut; under it
    its advice, where a run measured one, and its check where that is longer than a word or two."""
    mixed = len({c.clock for c in comparison.calls if c.same_work}) > 1
    checks = [_pair(c.check) for c in comparison.calls]
    checked = any(c.check != (None, None) for c in comparison.calls)
    check_column = checked and all(len(text) <= SHORT_CHECK for text in checks)
    headings = ["site", "call", "backend", "count", "µs per call", "B/A", *(["check"] if check_column else [])]
    cells = [[c.site, c.signature.brief() + (" compiled" if c.compiled else ""), _pair(c.backend, backend_label),
              _pair(c.count), _terminal_us(c, mixed), _ratio(c),
              *([check] if check_column else [])] for c, check in zip(comparison.calls, checks)]
    heading, rows = fitted_rows(headings, cells, width, wrap=1, right=[False, False, False, True, True, True], cut=0)
    above = [*wrapped(f"A: {comparison.a_path}", width), *wrapped(f"B: {comparison.b_path}", width),
             *wrapped(_clock_line(comparison), width), "", heading]
    out = [(text, False) for text in above]
    under_call = " " * heading.index("call")
    for change, check, lines in zip(comparison.calls, checks, rows):
        notes = [f"{SLOWER_MARK} slower in B by more than {comparison.threshold:.0%}"] \
            if change.slower(comparison.threshold) else []  # said in words, not in red alone (a pipe, a log)
        notes += [] if check_column or change.check == (None, None) else [f"check: {check}"]
        if change.best != (None, None) or change.saving_us_per_call != (None, None):
            notes.append(f"advice: {_pair(change.best, _best_label)}, saving "
                         f"{_pair(change.saving_us_per_call, us_number)} µs a call")
        lines += [text for note in notes for text in wrapped(under_call + note, width, under_call + INDENT)]
        red = change.slower(comparison.threshold) or change.check_failed
        out += [(text, red) for text in lines]
    return [*out, ("", False), *((text, False) for text in wrapped(_summary(comparison), width))]


@dataclass(frozen=True)
class WatchComparisonView:
    """``watch_comparison_lines`` at the width Rich renders it at, a regressed site's lines in bold red."""

    comparison: WatchComparison

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for text, red in watch_comparison_lines(self.comparison, options.max_width):
            yield Text(text, style="bold red" if red else "", no_wrap=True, overflow="ignore")


def watch_comparison_rich(comparison: WatchComparison) -> WatchComparisonView:
    return WatchComparisonView(comparison)


def watch_comparison_markdown(comparison: WatchComparison) -> str:
    lines = [f"A: `{comparison.a_path}`  B: `{comparison.b_path}`", "", "| " + " | ".join(COLUMNS) + " |",
             "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cells(c, comparison.threshold)) + " |" for c in comparison.calls]
    return "\n".join([*lines, "", _summary(comparison), ""])


def watch_comparison_dict(comparison: WatchComparison) -> dict[str, Any]:
    return {"kind": "watch", "a": comparison.a_path, "b": comparison.b_path, "threshold": comparison.threshold,
            "regressed": comparison.regressed, "sdpa_us": list(comparison.sdpa_us),
            "saving_us": list(comparison.saving_us), "contention": [text or None for text in comparison.contention],
            "calls": [{"site": c.site, "signature": c.signature.describe(), "compiled": c.compiled, "backend": list(c.backend),
                       "count": list(c.count), "clock": c.clock, "us": list(c.us), "ratio": c.ratio,
                       "same_work": c.same_work, "slower": c.slower(comparison.threshold),
                       "check": [None if v is None else v.text for v in c.check], "check_failed": c.check_failed,
                       "contended": list(c.contended), "best": list(c.best),
                       "saving_us_per_call": list(c.saving_us_per_call)} for c in comparison.calls]}
