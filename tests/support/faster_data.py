"""Windows of samples rebuilt from the real reports in ``fixtures/reports/``.

The reports keep, per backend and clock, the median, the 90th percentile and the sample count
(schema 1: no 10th percentile). :func:`window` rebuilds five values with exactly that median
and p90; their p10 mirrors the p90 around the median (``median - (p90 - median)``), which is an
assumption the reports cannot confirm.
"""

from __future__ import annotations

import json
from pathlib import Path

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.records import BackendStatus, Dispatch, Environment, Ready, Sample
from sdpa_tui.core.stats import Summary
from sdpa_tui.core.workload import Workload
from support.paths import REPORTS

H100_SMALL = REPORTS / "h100-torch2.11" / "report-small.json"  # [2, 8, 512, 64] fp16
H100_8K = REPORTS / "h100-torch2.11" / "report-8k.json"  # [1, 16, 8192, 128] bf16 causal
H200_SMALL = REPORTS / "h200-torch2.11" / "report-small.json"


def window(median: float, p90: float) -> list[float]:
    """Five values whose median is ``median`` and whose (linear) p90 is ``p90``."""
    spread = (p90 - median) / 0.6  # p90 of 5 sorted values sits 60 % of the way from the 4th to the 5th
    return [median - spread, median, median, median, median + spread]


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def summaries(path: Path, clock: str) -> dict[Backend, Summary]:
    """One Summary per backend that ran, from the report's ``clocks[clock]`` median and p90."""
    out = {}
    for entry in load(path)["backends"]:
        c = entry["clocks"][clock]
        if entry["status"] == "ok" and c["median"] is not None:
            out[Backend(entry["backend"])] = Summary.of(window(c["median"], c["p90"]))
    return out


def records_from(path: Path, config_id: int, priority: tuple[Backend, ...] | None = None) -> list:
    """The engine records that replay a real report with five samples per backend and clock.

    ``priority``: a dispatch order to replay instead of the recorded one, as ``--priority`` (or
    ``sdpa_kernel(..., set_priority=True)``) would set it; SDPA's pick is then the first of it
    that ran in the report (every backend that ran was eligible there).
    """
    doc = load(path)
    ran = [Backend(e["backend"]) for e in doc["backends"] if e["status"] == "ok"]
    if priority is None:
        choice = Backend(doc["dispatch"]["choice"])
        order = tuple(doc["dispatch"]["priority_order"])
    else:
        choice = next(b for b in priority if b in ran)
        order = tuple(b.value for b in priority)
    records: list = [Ready(Environment.from_dict(doc["environment"])), Dispatch(config_id, choice, order)]
    for entry in doc["backends"]:
        backend = Backend(entry["backend"])
        records.append(BackendStatus(config_id, backend, entry["status"], entry["reason"], tuple(entry["details"])))
        if entry["status"] != "ok":
            continue
        gpu, eager = entry["clocks"]["gpu"], entry["clocks"]["eager"]
        gpu_values = window(gpu["median"], gpu["p90"]) if gpu["median"] is not None else [None] * 5
        for i, (g, e) in enumerate(zip(gpu_values, window(eager["median"], eager["p90"]))):
            records.append(Sample(config_id, backend, g, e, "graph", 1, 1.0 + i))
    return records


def session_from(path: Path, priority: tuple[Backend, ...] | None = None) -> Session:
    """A session replaying a real report (see :func:`records_from`)."""
    doc = load(path)
    session = Session(Workload.from_dict(doc["workload"]), tuple(Backend(b) for b in doc["enabled"]))
    cid = session.next_config_id()
    for record in records_from(path, cid, priority):
        session.apply(record)
    return session
