"""``watch``'s advice, measured after the watched program exited: each signature's lab workload measured with every
backend forced (one engine process per device, ``engine/headless.measure_series``), turned into advice
(``core/advice.py``). Given to ``watch/cli.py`` by the top-level CLI, so the watch layer never imports the
engine's torch side."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import replace

from ..core.advice import (
    BF16_CODE,
    CAUSAL_CODE,
    HEAD_DIM_ALIGN,
    Measured,
    Rewrite,
    SignatureAdvice,
    advise,
    compiled_advice,
    expand_kv_code,
    pad_head_dim_code,
    padded_head_dim,
    refused_backends,
    run_advice,
    undecided_backends,
)
from ..core.backends import ALL_BACKENDS
from ..core.compiled_twins import cost_spec
from ..core.flex_alternative import FlexSpec, flex_alternative
from ..core.session import Session
from ..core.watch_lab import lab_workload
from ..core.watch_report import WatchReport
from ..core.workload import Workload, WorkloadError
from ..engine.compiled_cost_client import measure_compiled
from ..engine.flex_cost_client import measure_flex
from ..engine.headless import EngineFailed, measure_series

SECONDS_PER_SIGNATURE = 1.0
"""Each signature's workload is measured at least this long (and until every backend has its samples)."""
UNDECIDED_LONGEST_S = 6.0
"""A signature where a backend is faster by the medians but its spread still overlaps the call's backend's
(``core.faster.undecided``) is measured on, up to this long: with a few samples, a few slowed by a busy machine
decide (a 2-core VM running a soak beside the tests once gave no advice for a call Flash runs 3x faster)."""
TIMEOUT_PER_SIGNATURE_S = 120.0
FLEX_TIMEOUT_PER_SIGNATURE_S = 180.0
"""FlexAttention compiles at its first call: 4.5-13.5 s per shape on the H100, about 20 s on a loaded 2-core CPU."""


def rewritten(mask_causal: bool, workload: Workload) -> list[tuple[str, Workload]]:
    """The small changes at the call site that apply to this call, each as the lab workload it makes."""
    out = []
    if mask_causal and workload.mask != "causal":  # the same call with is_causal=True instead of its mask
        out.append(("is_causal", replace(workload, mask="causal")))
    if workload.kv_heads != workload.heads:  # K/V expanded to the query heads instead of enable_gqa
        out.append(("expand_kv", replace(workload, kv_heads=workload.heads)))
    if workload.head_dim % HEAD_DIM_ALIGN:  # the fused kernels want a multiple of 8: zeros added, the scale kept
        out.append(("pad_head_dim", replace(workload, head_dim=padded_head_dim(workload.head_dim))))
    if workload.dtype == "fp32":  # bf16 inputs (numerics change: listed with its error, never advised as best)
        out.append(("bf16", replace(workload, dtype="bf16")))
    return out


def rewrite_codes(workload: Workload) -> list[tuple[str, str]]:
    return [("is_causal", CAUSAL_CODE), ("expand_kv", expand_kv_code(workload.heads // max(workload.kv_heads, 1))),
            ("pad_head_dim", pad_head_dim_code(workload.head_dim)), ("bf16", BF16_CODE)]


def flex_costs(specs: dict[int, FlexSpec], say: Callable[[str], None], notes: list[str],
               describe: Callable[[int], str]) -> dict[int, Measured]:
    """FlexAttention at each row's lab workload (one child process for all; equal workloads measured once)."""
    if not specs:
        return {}
    unique = list(dict.fromkeys(specs.values()))
    say(f"sdpa-tui watch: measuring FlexAttention (compiled) at {len(unique)} workload(s)")
    answers = dict(zip(unique, measure_flex(unique, FLEX_TIMEOUT_PER_SIGNATURE_S * len(unique))))
    out = {}
    for i, spec in specs.items():
        cost, why = answers[spec]
        if cost is None:
            notes.append(f"{describe(i)}: FlexAttention not measured: {why}")
        else:
            out[i] = flex_alternative(cost, spec.workload)
            if cost.note:
                notes.append(f"{describe(i)}: FlexAttention {cost.note}")
    return out


def _settled(report: WatchReport, items: list[tuple[int, str, Workload, list[str]]]) -> Callable[[int, Session], bool]:
    """Whether the lab may move on from ``items[index]``: a rewrite, or a call's workload where no backend is
    undecided against the one the call ran."""
    def settled(index: int, session: Session) -> bool:
        row, variant = report.rows[items[index][0]], items[index][1]
        return bool(variant) or not undecided_backends(session, row.backend, refused_backends(row.why_not))
    return settled


def measure_advice(report: WatchReport, say: Callable[[str], None] | None = None, flex: bool = True) -> None:
    """Fill ``report.advice`` (one per row, None where there is none) and ``report.run_advice``; say how it went.
    ``flex``: measure FlexAttention too (it leaves SDPA; it compiles for seconds per shape)."""
    say = say or (lambda text: print(text, file=sys.stderr, flush=True))
    advice: list[SignatureAdvice | None] = [None] * len(report.rows)
    notes: list[str] = []
    by_device: dict[str, list[tuple[int, str, Workload, list[str]]]] = {}
    flex_specs: dict[int, FlexSpec] = {}
    for i, row in enumerate(report.rows):
        try:
            workload, differences = lab_workload(row.signature)
        except WorkloadError as exc:
            notes.append(f"{row.signature.describe()}: {exc}")
            continue
        items = by_device.setdefault(row.signature.device, [])
        items.append((i, "", workload, differences))
        if not row.compiled:  # a rewrite inside a compiled graph is not what the graph would run: not measured
            items += [(i, variant, changed, differences) for variant, changed in rewritten(row.mask_causal, workload)]
            if flex:
                flex_specs[i] = FlexSpec(workload, row.signature.device)
    started = time.monotonic()
    for device, items in by_device.items():
        say(f"sdpa-tui watch: measuring alternatives: {len({i for i, *_ in items})} signature(s) on {device}")
        measured: dict[int, tuple[Session, list[str]]] = {}
        rewrites: dict[int, list[Rewrite]] = {}
        codes = {i: dict(rewrite_codes(w)) for i, variant, w, _ in items if not variant}
        try:
            for (i, variant, _, differences), session in zip(items, measure_series(
                    [w for _, _, w, _ in items], ALL_BACKENDS, device=device, duration_s=SECONDS_PER_SIGNATURE,
                    timeout_s=TIMEOUT_PER_SIGNATURE_S, settled=_settled(report, items),
                    longest_s=UNDECIDED_LONGEST_S)):
                if variant:
                    rewrites.setdefault(i, []).append(Rewrite(variant, codes[i][variant], session,
                                                              exact=variant != "bf16"))
                else:
                    measured[i] = (session, differences)
        except EngineFailed as exc:
            notes.append(f"the alternatives on {device} were not measured: {exc}")
        flexed = flex_costs({i: spec for i, spec in flex_specs.items() if spec.device == device and i in measured},
                            say, notes, lambda i: report.rows[i].signature.describe())
        for i, (session, differences) in measured.items():
            row = report.rows[i]
            advice[i] = advise(session, row.backend, row.signature.priority, differences, rewrites.get(i, ()),
                               refused_backends(row.why_not), [flexed[i]] if i in flexed else ())
            if row.compiled:
                advice[i] = compiled_advice(advice[i], row.eager_backend)
                spec = cost_spec(row, row.eager_twin)
                if spec is not None:
                    say(f"sdpa-tui watch: compiling {row.signature.describe()} alone to measure it")
                    cost, why = measure_compiled(spec, TIMEOUT_PER_SIGNATURE_S)
                    if cost is not None:
                        advice[i] = replace(advice[i], compiled_cost=cost)
                    else:
                        notes.append(f"{row.signature.describe()} [compiled]: not measured alone: {why}")
    report.advice = advice
    report.run_advice = run_advice(
        (row.signature.describe(), row.count, a) for row, a in zip(report.rows, advice) if a is not None)
    advised = sum(a is not None for a in advice)
    report.advice_note = (f"alternatives measured after the program exited: {advised} signature(s), "
                          f"{time.monotonic() - started:.1f} s" + (f"; {'; '.join(notes)}" if notes else ""))
