"""Read Chrome traces written by ``torch.profiler`` and cut them into calls.

Standard library only: the UI and the tests read traces without importing torch.
A trace is the plain ``dict`` that ``json.load`` gives; times in it are microseconds.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..protocol.records import KernelInfo

ANNOTATION = "sdpa_tui.call"
"""The ``record_function`` name the engine wraps around each measured call."""

GPU_CATEGORIES = ("kernel", "gpu_memset", "gpu_memcpy")
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")  # cuDNN launches through cuLaunchKernelEx
_EPS_US = 1e-3  # traces round timestamps to nanoseconds

Event = dict[str, Any]


def load_trace(path: str | Path) -> dict[str, Any]:
    """Load a Chrome trace (``.json`` or ``.json.gz``); ValueError if it is not one."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable JSON trace: {exc}") from exc
    if isinstance(data, list):  # the bare-array form of the Chrome trace format
        data = {"traceEvents": data}
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ValueError(f"{path}: not a Chrome trace (no 'traceEvents' list)")
    return data


def _events(trace: dict[str, Any], *categories: str) -> list[Event]:
    """Complete ('X') events of the given categories, with numeric ts and dur."""
    out = []
    for e in trace.get("traceEvents", ()):
        if (
            isinstance(e, dict)
            and e.get("ph") == "X"
            and e.get("cat") in categories
            and isinstance(e.get("ts"), (int, float))
            and isinstance(e.get("dur"), (int, float))
        ):
            out.append(e)
    return out


def _dim3(value: Any) -> tuple[int, int, int] | None:
    if isinstance(value, (list, tuple)) and len(value) == 3:
        try:
            x, y, z = (int(v) for v in value)
        except (TypeError, ValueError):
            return None
        return (x, y, z)
    return None


def _number(value: Any, kind: type) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return kind(value)


def _kernel_info(event: Event, category: str | None = None) -> KernelInfo:
    args = event.get("args") or {}
    return KernelInfo(
        name=str(event.get("name", "")),
        duration_us=float(event["dur"]),
        category=category or str(event["cat"]),
        grid=_dim3(args.get("grid")),
        block=_dim3(args.get("block")),
        shared_memory=_number(args.get("shared memory"), int),
        registers=_number(args.get("registers per thread"), int),
        occupancy=_number(args.get("est. achieved occupancy %"), float),
        blocks_per_sm=_number(args.get("blocks per SM"), float),
    )


def _gpu_events(trace: dict[str, Any]) -> list[Event]:
    return sorted(_events(trace, *GPU_CATEGORIES), key=lambda e: e["ts"])


def gpu_activities(trace: dict[str, Any]) -> list[KernelInfo]:
    """Every kernel, memset and memcpy of the trace, in start order."""
    return [_kernel_info(e) for e in _gpu_events(trace)]


def _annotations(trace: dict[str, Any], annotation: str) -> list[Event]:
    """The CPU-side ranges of ``annotation`` (never the 'gpu_user_annotation' copies)."""
    found = [e for e in _events(trace, "user_annotation") if e.get("name") == annotation]
    return sorted(found, key=lambda e: e["ts"])


def _contains(outer: Event, inner_ts: float, inner_end: float | None = None) -> bool:
    end = inner_ts if inner_end is None else inner_end
    return outer["ts"] - _EPS_US <= inner_ts and end <= outer["ts"] + outer["dur"] + _EPS_US


def _same_process(a: Event, b: Event) -> bool:
    return a.get("pid") == b.get("pid")


def split_calls(trace: dict[str, Any], annotation: str = ANNOTATION) -> list[list[KernelInfo]]:
    """GPU activities grouped per annotated call, through the launch events' correlation ids.

    A launch belongs to the call whose time range contains it, on any thread of the
    process: the backward pass launches its kernels from autograd's own thread while the
    calling thread waits inside the annotation. Without any annotation the whole trace is
    one call. Activities whose launch lies in no annotation are dropped.
    """
    gpu = _gpu_events(trace)
    calls = _annotations(trace, annotation)
    if not calls:
        return [[_kernel_info(e) for e in gpu]]
    launches: dict[Any, Event] = {}
    for e in _events(trace, *LAUNCH_CATEGORIES):
        corr = (e.get("args") or {}).get("correlation")
        if corr is not None:
            launches[corr] = e
    out: list[list[KernelInfo]] = [[] for _ in calls]
    for e in gpu:
        launch = launches.get((e.get("args") or {}).get("correlation"))
        if launch is None:
            continue
        for i, call in enumerate(calls):
            if _same_process(call, launch) and _contains(call, launch["ts"]):
                out[i].append(_kernel_info(e))
                break
    return out


def _self_times(ops: list[Event]) -> list[tuple[Event, float, bool]]:
    """Each op of one thread with its self time (duration minus direct children) and leafness."""
    ordered = sorted(ops, key=lambda e: (e["ts"], -e["dur"]))
    self_us = {id(e): float(e["dur"]) for e in ordered}
    leaf = {id(e): True for e in ordered}
    stack: list[Event] = []
    for e in ordered:
        while stack and not _contains(stack[-1], e["ts"], e["ts"] + e["dur"]):
            stack.pop()
        if stack:
            self_us[id(stack[-1])] -= e["dur"]
            leaf[id(stack[-1])] = False
        stack.append(e)
    return [(e, max(self_us[id(e)], 0.0), leaf[id(e)]) for e in ordered]


def cpu_ops_per_call(
    trace: dict[str, Any], annotation: str = ANNOTATION
) -> list[list[KernelInfo]]:
    """The CPU ops of each annotated call, each with its *self* time, in start order.

    Leaf ops keep their whole duration. Ops with children are kept with their self time
    when it is above zero, because on the CPU the attention op does its work itself
    (``aten::_scaled_dot_product_flash_attention_for_cpu`` only has tiny view and
    allocation children), so leaves alone would miss nearly all the time.
    """
    ops_by_thread: dict[tuple[Any, Any], list[Event]] = defaultdict(list)
    for e in _events(trace, "cpu_op"):
        ops_by_thread[(e.get("pid"), e.get("tid"))].append(e)
    timed = {key: _self_times(ops) for key, ops in ops_by_thread.items()}
    out: list[list[KernelInfo]] = []
    for call in _annotations(trace, annotation):
        rows = timed.get((call.get("pid"), call.get("tid")), [])
        out.append(
            [
                KernelInfo(name=str(e.get("name", "")), duration_us=self_us, category="cpu_op")
                for e, self_us, is_leaf in rows
                if _contains(call, e["ts"], e["ts"] + e["dur"]) and (is_leaf or self_us > 0)
            ]
        )
    return out


def calls_of(trace: dict[str, Any], annotation: str = ANNOTATION) -> list[list[KernelInfo]]:
    """The activities of each call: GPU ones when the trace has any, else the CPU ops."""
    if _gpu_events(trace):
        return split_calls(trace, annotation)
    return cpu_ops_per_call(trace, annotation)


def kernels_in_ranges(trace: dict[str, Any], prefix: str) -> dict[str, list[str]]:
    """Range name → the GPU activity names launched inside the CPU ranges whose name starts with ``prefix``.

    Ranges are ``record_function`` annotations (or Dynamo's ``Torch-Compiled Region: 0/0``); a
    launch belongs to a range of the same process whose time contains it, on any thread (as in
    :func:`split_calls`). Names keep their first-seen order, each once.
    """
    ranges = [
        e for e in trace.get("traceEvents", [])
        if isinstance(e, dict) and e.get("ph") == "X" and str(e.get("name", "")).startswith(prefix)
        and e.get("cat") not in (*GPU_CATEGORIES, "gpu_user_annotation") and "dur" in e
    ]
    if not ranges:
        return {}
    launches: dict[Any, Event] = {}
    for e in _events(trace, *LAUNCH_CATEGORIES):
        corr = (e.get("args") or {}).get("correlation")
        if corr is not None:
            launches[corr] = e
    out: dict[str, list[str]] = {}
    for e in _gpu_events(trace):
        launch = launches.get((e.get("args") or {}).get("correlation"))
        if launch is None:
            continue
        for r in ranges:
            if _same_process(r, launch) and _contains(r, launch["ts"]):
                names = out.setdefault(str(r["name"]), [])
                if e.get("name") not in names:
                    names.append(str(e.get("name")))
                break
    return out
