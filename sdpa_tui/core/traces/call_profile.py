"""What one profiled SDPA call cost on the GPU: its own kernels, their summed time, and its backward.

Read from a torch.profiler Chrome trace (standard library only, as :mod:`trace`). A call's
GPU work is every kernel, memset and copy whose launch lies inside the call's CPU range on
that range's thread (CUPTI's durations: the lab's kernel clock). Its backward is found through
autograd's sequence numbers: each op inside the forward range that autograd records carries a
``Sequence number``, and the ``autograd::engine::evaluate_function: …Backward0`` range with the
same number runs its gradient (on autograd's thread). Calls inside compiled graphs have no
``aten::scaled_dot_product_attention`` above them: they are the backend ops themselves
(``aten::_scaled_dot_product_cudnn_attention`` …), named with their input shapes when the
profiler records shapes.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .trace import GPU_CATEGORIES, LAUNCH_CATEGORIES, Event

BACKEND_OPS: dict[str, str] = {
    "aten::_scaled_dot_product_cudnn_attention": "CUDNN_ATTENTION",
    "aten::_scaled_dot_product_flash_attention": "FLASH_ATTENTION",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "FLASH_ATTENTION",
    "aten::_scaled_dot_product_efficient_attention": "EFFICIENT_ATTENTION",
    "aten::_scaled_dot_product_attention_math": "MATH",
    "aten::_scaled_dot_product_fused_attention_overrideable": "OVERRIDEABLE",
}
"""The aten op each backend runs under (forward); its backward op adds ``_backward``."""
BACKWARD_OPS: dict[str, str] = {f"{op}_backward": backend for op, backend in BACKEND_OPS.items()}
TOP_OP = "aten::scaled_dot_product_attention"
EVALUATE = "autograd::engine::evaluate_function: "
_EPS_US = 1e-3


@dataclass(frozen=True)
class Activity:
    name: str
    duration_us: float
    lead_us: float | None = None  # from its launch call's return to its start on the GPU: how far the host was ahead


@dataclass
class ProfiledCall:
    """One call as the profiler saw it: the backend op it ran, its GPU activities, its backward's."""

    name: str  # the range's name (``sdpa-tui#3``) or the backend op's
    backend: str | None
    activities: list[Activity] = field(default_factory=list)
    backward_backend: str | None = None
    backward: list[Activity] | None = None  # None: no backward of this call in the trace
    shapes: tuple[tuple[int, ...], ...] = ()  # the op's input dims, where recorded
    dtype: str = ""
    cpu_us: float = 0.0  # the op's host duration (on the CPU, where the op does the work itself)
    graph: str = ""  # compiled ops: the name of the probe's range around the graph's run, if any
    run: float = 0.0  # compiled ops: that range's start (one run of the graph)

    @property
    def kernel_us(self) -> float:
        return sum(a.duration_us for a in self.activities)

    @property
    def backward_us(self) -> float | None:
        return None if self.backward is None else sum(a.duration_us for a in self.backward)

    @property
    def backward_lead_us(self) -> float | None:
        """How far ahead of the GPU autograd's thread launched the call's backward's first kernel (µs; 0: the GPU
        waited for the launch), or None where the trace does not say."""
        return self.backward[0].lead_us if self.backward else None


@dataclass
class ProfileReading:
    """Every SDPA call of one trace, and the GPU time of the whole trace (for the share)."""

    ranged: list[ProfiledCall]  # calls the probe wrapped in a named range, in start order
    compiled: list[ProfiledCall]  # backend ops with no SDPA op or probe range above them
    compiled_backward: list[ProfiledCall]  # backward backend ops run outside autograd's per-op functions
    gpu_us: float  # every GPU activity of the traced process(es)
    untimed: int = 0  # GPU activities the profiler gave no timestamps (ts and dur 0): their calls are left out


def _complete(trace: dict[str, Any]) -> list[Event]:
    return [e for e in trace.get("traceEvents", ()) if isinstance(e, dict) and e.get("ph") == "X"
            and isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float))]


def _inside(outer: Event, inner: Event) -> bool:
    return (outer["ts"] - _EPS_US <= inner["ts"]
            and inner["ts"] + inner.get("dur", 0) <= outer["ts"] + outer["dur"] + _EPS_US)


class _Index:
    """The trace's CPU events per thread and its GPU activities per launching thread."""

    def __init__(self, trace: dict[str, Any]) -> None:
        events = _complete(trace)
        self.cpu: dict[tuple, list[Event]] = defaultdict(list)
        launches: dict[Any, Event] = {}
        gpu = []
        for e in events:
            cat = e.get("cat")
            if cat in GPU_CATEGORIES:
                gpu.append(e)
            elif cat in LAUNCH_CATEGORIES:
                corr = (e.get("args") or {}).get("correlation")
                if corr is not None:
                    launches[corr] = e
            elif cat in ("cpu_op", "user_annotation"):
                self.cpu[(e.get("pid"), e.get("tid"))].append(e)
        for ops in self.cpu.values():
            ops.sort(key=lambda e: (e["ts"], -e["dur"]))
        self.starts = {thread: [e["ts"] for e in ops] for thread, ops in self.cpu.items()}
        self.gpu_us = sum(float(e["dur"]) for e in gpu)
        # CUPTI may hand back a whole window's records with no timing (ts = dur = 0): such a call has no time
        self.untimed = sum(1 for e in gpu if not e["ts"] and not e["dur"])
        # launch time → the activity it launched and its lead (its start on the GPU after the launch call's return),
        # per thread, in time order
        self.launched: dict[tuple, list[tuple[float, Event, float]]] = defaultdict(list)
        for e in gpu:
            launch = launches.get((e.get("args") or {}).get("correlation"))
            if launch is not None:
                lead = max(0.0, float(e["ts"]) - float(launch["ts"]) - float(launch["dur"]))
                self.launched[(launch.get("pid"), launch.get("tid"))].append((launch["ts"], e, lead))
        for items in self.launched.values():
            items.sort(key=lambda item: item[0])
        self.launch_times = {thread: [item[0] for item in items] for thread, items in self.launched.items()}

    def activities(self, thread: tuple, outer: Event) -> list[Activity]:
        start, end = outer["ts"] - _EPS_US, outer["ts"] + outer["dur"] + _EPS_US
        items = self.launched.get(thread, [])
        times = self.launch_times.get(thread, [])
        found = sorted(items[bisect_left(times, start):bisect_right(times, end)], key=lambda item: item[1]["ts"])
        return [Activity(str(e.get("name", "")), float(e["dur"]), lead) for _, e, lead in found]

    def inside(self, thread: tuple, outer: Event) -> list[Event]:
        """The thread's CPU events inside ``outer`` (those starting in it, by bisection)."""
        ops = self.cpu.get(thread, [])
        starts = self.starts.get(thread, [])
        lo = bisect_left(starts, outer["ts"] - _EPS_US)
        hi = bisect_right(starts, outer["ts"] + outer["dur"] + _EPS_US)
        return [e for e in ops[lo:hi] if e is not outer and _inside(outer, e)]

    def around(self, thread: tuple, inner: Event) -> list[Event]:
        """The thread's CPU events that started before ``inner`` and contain it."""
        ops = self.cpu.get(thread, [])
        hi = bisect_right(self.starts.get(thread, []), inner["ts"] + _EPS_US)
        return [e for e in ops[:hi] if e is not inner and _inside(e, inner)]


def _shapes(op: Event) -> tuple[tuple[tuple[int, ...], ...], str]:
    args = op.get("args") or {}
    dims = args.get("Input Dims") or []
    shapes = tuple(tuple(int(d) for d in dim) if isinstance(dim, list) else () for dim in dims)
    types = args.get("Input type") or []
    return shapes, str(types[0]) if types else ""


def _backend_op(ops: list[Event], table: dict[str, str]) -> Event | None:
    return next((e for e in ops if e.get("name") in table), None)


def _backward_index(index: _Index) -> dict[int, list[tuple[tuple, Event]]]:
    """Sequence number → autograd's evaluate_function ranges with it (there may be several threads)."""
    found: dict[int, list[tuple[tuple, Event]]] = defaultdict(list)
    for thread, ops in index.cpu.items():
        for e in ops:
            if str(e.get("name", "")).startswith(EVALUATE):
                seq = (e.get("args") or {}).get("Sequence number")
                if isinstance(seq, int):
                    found[seq].append((thread, e))
    return found


def _attach_backward(call: ProfiledCall, inner: list[Event], forward: Event, index: _Index,
                     backward: dict[int, list[tuple[tuple, Event]]]) -> None:
    """The gradient of the ops inside ``forward``: the evaluate_function ranges with their sequence numbers."""
    op = _backend_op([forward, *inner], BACKEND_OPS)
    if op is not None and op["name"] != "aten::_scaled_dot_product_attention_math":
        sources = [op]  # the fused op is one autograd node; ops beside it may carry the next node's number
    else:
        sources = [e for e in inner if e.get("cat") == "cpu_op"]
    seqs = {s for e in sources if isinstance(s := (e.get("args") or {}).get("Sequence number"), int) and s >= 0}
    acts: list[Activity] = []
    matched = False
    for seq in seqs:
        for thread, fn in backward.get(seq, ()):
            if fn["ts"] < forward["ts"]:
                continue
            matched = True
            acts.extend(index.activities(thread, fn))
            op = _backend_op(index.inside(thread, fn), BACKWARD_OPS)
            if op is not None:
                call.backward_backend = BACKWARD_OPS[op["name"]]
    if matched:
        call.backward = acts
        if call.backward_backend is None and call.backend == "MATH":
            call.backward_backend = "MATH"


def read_calls(trace: dict[str, Any], prefix: str, graph_prefix: str = "\0") -> ProfileReading:
    """The calls in ranges named ``prefix…``, and the compiled graphs' backend ops, of one trace.

    A compiled op inside a range named ``graph_prefix…`` (the probe's, around one run of a graph)
    carries that range's name and start.
    """
    index = _Index(trace)
    backward = _backward_index(index)
    ranged: list[ProfiledCall] = []
    compiled: list[ProfiledCall] = []
    compiled_bwd: list[ProfiledCall] = []
    for thread, ops in index.cpu.items():
        covered = _Nest()  # ranges and SDPA ops whose backend op is already counted (and counted backend ops)
        covered_bwd = _Nest()
        graphs: list[Event] = []
        for e in ops:
            name = str(e.get("name", ""))
            if e.get("cat") == "user_annotation" and name.startswith(graph_prefix):
                graphs.append(e)
            if e.get("cat") == "user_annotation" and name.startswith(prefix):
                inner = index.inside(thread, e)
                op = _backend_op(inner, BACKEND_OPS)
                call = ProfiledCall(name, BACKEND_OPS[op["name"]] if op else None, index.activities(thread, e))
                _attach_backward(call, inner, e, index, backward)
                ranged.append(call)
                covered.push(e)
            elif name == TOP_OP:
                covered.push(e)
            elif name in BACKEND_OPS and not covered.holds(e):
                covered.push(e)  # the op may appear nested in itself (a compiled graph's first run): once
                shapes, dtype = _shapes(e)
                run = next((g for g in reversed(graphs) if _inside(g, e)), None)
                call = ProfiledCall(name, BACKEND_OPS[name], index.activities(thread, e), shapes=shapes, dtype=dtype,
                                    cpu_us=float(e["dur"]), graph=str(run["name"]) if run else "",
                                    run=float(run["ts"]) if run else 0.0)
                _attach_backward(call, index.inside(thread, e), e, index, backward)
                compiled.append(call)
            elif name in BACKWARD_OPS and not covered_bwd.holds(e) and not _under_own_function(index, thread, e):
                covered_bwd.push(e)
                shapes, dtype = _shapes(e)
                compiled_bwd.append(ProfiledCall(name, BACKWARD_OPS[name], index.activities(thread, e),
                                                 shapes=shapes, dtype=dtype, cpu_us=float(e["dur"])))
    if index.untimed:  # a window with untimed records gives no call a time (nor, launches untimed, its kernels)
        ranged, compiled, compiled_bwd = [], [], []
    return ProfileReading(ranged, compiled, compiled_bwd, index.gpu_us, index.untimed)


class _Nest:
    """Events pushed in start order; ``holds(e)``: is ``e`` inside one of them (nested intervals: a stack)."""

    def __init__(self) -> None:
        self._open: list[Event] = []

    def _prune(self, ts: float) -> None:
        while self._open and self._open[-1]["ts"] + self._open[-1]["dur"] + _EPS_US < ts:
            self._open.pop()

    def push(self, e: Event) -> None:
        self._prune(e["ts"])
        self._open.append(e)

    def holds(self, e: Event) -> bool:
        self._prune(e["ts"])
        return any(_inside(o, e) for o in self._open)


def _under_own_function(index: _Index, thread: tuple, op: Event) -> bool:
    """An eager backward op runs under its own ``…Backward0`` function; a compiled graph's does not."""
    return any(str(e.get("name", "")).startswith(EVALUATE) and "ScaledDotProduct" in str(e.get("name"))
               for e in index.around(thread, op))
