"""One profiler window of a watched process, read from its Chrome trace: every SDPA call's own GPU work.

Standard library only, so it runs in a helper process (``python -m sdpa_tui.core.traces.window_reading
TRACE``, which prints the reading as one JSON line): parsing a trace of tens of thousands of
events takes the GIL for seconds, and in the watched process that would slow the program's own
threads. The watched process exports the trace, waits for the helper (the GIL free meanwhile) and
applies the small result.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any

from .call_profile import Activity, ProfiledCall, ProfileReading, read_calls
from .kernel_names import ATTENTION_FAMILIES, identify
from .trace import kernels_in_ranges, load_trace

RANGE_PREFIX = "sdpa-tui#"
"""An eager call in a window runs in a range ``sdpa-tui#<entry index>`` (``…#first``: its signature's first call)."""
GRAPH_PREFIX = "sdpa-tui-graph#"
"""A compiled graph's run in a window: ``sdpa-tui-graph#<index of its first entry>``."""
FIRST_SUFFIX = "#first"
COMPILED_PREFIX = "Torch-Compiled Region"


@dataclass
class WindowReading:
    reading: ProfileReading
    compiled_kernels: list[str] = field(default_factory=list)  # attention kernels under compiled regions
    events: int = 0


def read_window(trace: dict[str, Any]) -> WindowReading:
    compiled = [k for names in kernels_in_ranges(trace, COMPILED_PREFIX).values() for k in names
                if identify(k).family in ATTENTION_FAMILIES]
    return WindowReading(read_calls(trace, RANGE_PREFIX, GRAPH_PREFIX), list(dict.fromkeys(compiled)),
                         len(trace.get("traceEvents", ())))


def _call_dict(c: ProfiledCall) -> dict[str, Any]:
    def acts(items: list[Activity]) -> list[list[Any]]:
        return [[a.name, a.duration_us, a.lead_us] for a in items]

    return {"name": c.name, "backend": c.backend, "activities": acts(c.activities),
            "backward_backend": c.backward_backend, "backward": None if c.backward is None else acts(c.backward),
            "shapes": [list(s) for s in c.shapes], "dtype": c.dtype, "cpu_us": c.cpu_us, "graph": c.graph,
            "run": c.run}


def _call(d: dict[str, Any]) -> ProfiledCall:
    def acts(items):  # [name, µs, lead µs or None]
        return [Activity(str(name), float(us), None if lead is None else float(lead)) for name, us, lead in items]

    return ProfiledCall(
        str(d["name"]), d.get("backend"), acts(d.get("activities", ())), d.get("backward_backend"),
        None if d.get("backward") is None else acts(d["backward"]),
        tuple(tuple(int(x) for x in s) for s in d.get("shapes", ())), str(d.get("dtype", "")),
        float(d.get("cpu_us", 0.0)), str(d.get("graph", "")), float(d.get("run", 0.0)),
    )


def to_json(w: WindowReading) -> str:
    r = w.reading
    return json.dumps({
        "ranged": [_call_dict(c) for c in r.ranged], "compiled": [_call_dict(c) for c in r.compiled],
        "compiled_backward": [_call_dict(c) for c in r.compiled_backward], "gpu_us": r.gpu_us,
        "untimed": r.untimed, "compiled_kernels": w.compiled_kernels, "events": w.events,
    })


def from_json(text: str) -> WindowReading:
    d = json.loads(text)
    reading = ProfileReading([_call(c) for c in d["ranged"]], [_call(c) for c in d["compiled"]],
                             [_call(c) for c in d["compiled_backward"]], float(d["gpu_us"]), int(d.get("untimed", 0)))
    return WindowReading(reading, [str(k) for k in d.get("compiled_kernels", ())], int(d.get("events", 0)))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m sdpa_tui.core.traces.window_reading TRACE.json", file=sys.stderr)
        return 2
    try:
        trace = load_trace(argv[0])
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(to_json(read_window(trace)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
