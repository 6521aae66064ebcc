"""The workload cycle of ``soak.py --cycle``: which workloads, the keys that go from one to the
next, and the engine's RSS at each visit of each workload.

The question it answers (issue 12.8): does the engine's host memory step once, the first time a
workload (a dtype's kernels) is used, or does it grow each time the workload comes back? Bounded
first-use cost shows as visit 2, 3, ... ≈ visit 1 for every workload; growth shows as a line
that rises from visit to visit. No torch, no textual: the soak feeds it its sample rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DTYPE_ORDER = ("fp16", "bf16", "fp32")
"""The order the app's ``d`` key cycles the dtype in (``core.workload.DTYPES``)."""


@dataclass(frozen=True)
class Stop:
    """One workload of the cycle: what differs between them is the dtype and the sequence length."""

    dtype: str
    seq: int

    @property
    def label(self) -> str:
        return f"{self.dtype} seq {self.seq}"


def parse_cycle(dtypes: str, seqs: str) -> list[Stop]:
    """``"fp16,bf16,fp32"`` and ``"128,256"`` -> each dtype with each length, dtype outermost.

    Raises ValueError (one line) for an unknown dtype, a length that is not a positive whole
    number, a repeat, or lengths the ``+``/``-`` keys cannot reach from one another (each must be
    a power of two times the others).
    """
    names = [d.strip() for d in dtypes.split(",") if d.strip()]
    unknown = [d for d in names if d not in DTYPE_ORDER]
    if not names or unknown:
        raise ValueError(f"--cycle takes dtypes from {', '.join(DTYPE_ORDER)}, got {dtypes!r}")
    try:
        lengths = [int(s) for s in seqs.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--cycle-seqs takes whole numbers, got {seqs!r}") from None
    if not lengths or min(lengths) <= 0:
        raise ValueError(f"--cycle-seqs takes positive lengths, got {seqs!r}")
    if len(set(names)) != len(names) or len(set(lengths)) != len(lengths):
        raise ValueError("--cycle and --cycle-seqs must not repeat a value")
    for n in lengths:
        ratio = max(n, lengths[0]) // min(n, lengths[0])
        if max(n, lengths[0]) % min(n, lengths[0]) or ratio & (ratio - 1):
            raise ValueError(f"--cycle-seqs: {n} and {lengths[0]} are not a power of two apart "
                             "(the + and - keys double and halve)")
    return [Stop(d, n) for d in names for n in lengths]


def keys_between(here: Stop, there: Stop) -> list[str]:
    """The key presses that take the app from one stop to the next: ``d`` as often as the dtype
    needs, then ``plus`` or ``minus`` until the length is reached."""
    turns = (DTYPE_ORDER.index(there.dtype) - DTYPE_ORDER.index(here.dtype)) % len(DTYPE_ORDER)
    keys = ["d"] * turns
    seq = here.seq
    while seq < there.seq:
        keys.append("plus")
        seq *= 2
    while seq > there.seq:
        keys.append("minus")
        seq //= 2
    return keys


def per_visit(samples: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """For each stop (in the order first seen), its visits in order: the engine's RSS at the last
    sample of the visit (settled: the soak samples just before it leaves) and at most, when the
    visit was sampled, and which engine processes it saw (more than one: the engine was replaced
    or restarted, and the visits no longer compare).

    Rows carry ``cycle_stop`` and ``visit`` (the n-th visit of that stop); rows without them or
    without an engine RSS are left out.
    """
    table: dict[str, dict[int, dict[str, Any]]] = {}
    for row in samples:
        stop, visit, rss = row.get("cycle_stop"), row.get("visit"), row.get("engine_rss_mib")
        if stop is None or visit is None or rss is None:
            continue
        v = table.setdefault(stop, {}).setdefault(visit, {
            "visit": visit, "first_s": row["elapsed_s"], "rss_max_mib": rss, "engine_pids": []})
        v["last_s"] = row["elapsed_s"]
        v["rss_end_mib"] = rss
        v["rss_max_mib"] = max(v["rss_max_mib"], rss)
        if row.get("engine_pid") is not None and row["engine_pid"] not in v["engine_pids"]:
            v["engine_pids"].append(row["engine_pid"])
    return {stop: [visits[n] for n in sorted(visits)] for stop, visits in table.items()}


def later_minus_first(visits: list[dict[str, Any]]) -> float | None:
    """RSS at the end of the last visit minus at the end of the first (None with one visit, or
    where another engine process ran in between: then the difference says nothing)."""
    if len(visits) < 2:
        return None
    if len({pid for v in visits for pid in v["engine_pids"]}) > 1:
        return None
    return visits[-1]["rss_end_mib"] - visits[0]["rss_end_mib"]


def format_table(table: dict[str, list[dict[str, Any]]]) -> str:
    """The per-visit table the soak prints: one line per stop, the RSS (MiB) at the end of each
    visit, then last minus first; ``*`` marks a visit run by another engine process than the
    first visit of the soak (the engine was restarted or replaced)."""
    width = max((len(v) for v in table.values()), default=0)
    every = sorted((v for visits in table.values() for v in visits), key=lambda v: v["first_s"])
    first_pids = set(every[0]["engine_pids"]) if every else set()
    head = f"{'workload':<16}" + "".join(f"{f'visit {n}':>11}" for n in range(1, width + 1)) + f"{'last - 1st':>13}"
    lines = [head]
    for stop, visits in table.items():
        cells = [f"{v['rss_end_mib']:,.1f}{'' if set(v['engine_pids']) <= first_pids else '*'}" for v in visits]
        diff = later_minus_first(visits)
        lines.append(f"{stop:<16}" + "".join(f"{c:>11}" for c in cells) + " " * 11 * (width - len(cells))
                     + f"{'n/a' if diff is None else f'{diff:+,.1f}':>13}")
    return "\n".join(lines)
