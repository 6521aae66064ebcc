"""``watch``'s advice, measured after the watched program exited: each signature's lab workload measured with every
backend forced (one engine process per device, ``engine/host/headless.measure_series``), turned into advice
(``core/calls/advice.py``). Every code the advice may offer (``core/calls/call_code.py``) is run against its call
first (``engine/costs/code_check.py``, one process for the run): a rewrite whose code does not give the call's output
is not measured, a backend switch that does not is never advised, and the note says why. Given to
``commands/watch.py`` by the top-level CLI, so the watch layer never imports the engine's torch side."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import replace

from ...core.backends import ALL_BACKENDS
from ...core.calls import mask_forms
from ...core.calls.advice import (
    AdviceProgress,
    Measured,
    Rewrite,
    SignatureAdvice,
    advise,
    compiled_advice,
    refused_backends,
    run_advice,
    undecided_backends,
)
from ...core.calls.call_code import (
    HEAD_DIM_ALIGN,
    REWRITE_NUMERICS,
    CodeCheck,
    CodesToCheck,
    OfferedCode,
    backend_code,
    padded_head_dim,
    rewrite_codes,
)
from ...core.calls.compiled_twins import cost_spec
from ...core.calls.flex_alternative import FlexSpec, flex_alternative, flex_spec
from ...core.calls.packed_alternative import LABELS, PackedSpec, packed_alternative, packed_spec
from ...core.calls.packed_alternative import refusal as packed_refusal
from ...core.calls.watch_lab import lab_workload
from ...core.calls.watch_report import CallRow, WatchReport
from ...core.lab.session import Session
from ...core.padded_lengths import from_histogram, typical
from ...core.workload import Workload, WorkloadError
from ...engine.host.code_check_client import check_codes
from ...engine.host.compiled_cost_client import measure_compiled
from ...engine.host.flex_cost_client import measure_flex
from ...engine.host.headless import EngineFailed, SeriesProgress, measure_series
from ...engine.host.packed_cost_client import measure_packed
from .advice_progress import StderrProgress

SECONDS_PER_SIGNATURE = 1.0
"""Each signature's workload is measured at least this long (and until every backend has its samples)."""
UNDECIDED_LONGEST_S = 6.0
"""A signature where a backend is faster by the medians but its spread still overlaps the call's backend's
(``core.faster.undecided``) is measured on, up to this long: with a few samples, a few slowed by a busy machine
decide (a 2-core VM running a soak beside the tests once gave no advice for a call Flash runs 3x faster)."""
TIMEOUT_PER_SIGNATURE_S = 120.0
ADVICE_BUDGET_S = 10.0
ADVICE_BUDGET_SHARE = 0.25
"""The alternatives are measured for about ``max(ADVICE_BUDGET_S, ADVICE_BUDGET_SHARE × the program's run)`` after it
exited (``--advice-budget`` sets another): a 5.5 s program once waited 38.3 s for them, silent."""
OVER_BUDGET_SHARE = 0.5
"""Past the budget the workload under way ends once its backends have their samples, at most this share of the budget
later (with fewer samples: the noise rule then advises nothing from it)."""
CODE_CHECK_AT_LEAST_S = 60.0
"""The advice's code is run against each call (one child process with torch, before anything is measured) with this
long at least, past the budget if need be: a code not run is not offered (4 to 7 s on the loaded 2-core development
VM, 2026-11-27, most of it importing torch)."""
FLEX_AT_LEAST_S = 5.0
"""FlexAttention (and a compiled call alone) is not started with less of the budget left: it compiles at its first
call, 4.5-13.5 s per shape on the H100, about 20 s on a loaded 2-core CPU."""
PACKED_AT_LEAST_S = 2.0
"""Packed attention (``varlen_attn``, nested jagged SDPA) is not started with less of the budget left: it compiles
nothing, its code is checked and timed in a second or two per workload."""
PACKED_RESERVE_S = 30.0
"""Held back from the SDPA backends' measuring on a device where padded calls have packed attention to measure (after
the backends): on an H100, a Llama's two padded signatures at [8, 16, 4096, 64] kept the backends busy for the whole
of a 240 s budget (MATH's samples), and packed attention was measured not at all."""


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


def codes_to_check(row: CallRow, workload: Workload, variants: list[str]) -> CodesToCheck:
    """Every code the row's advice may offer: each backend's switch and each rewrite that applies (``variants``)."""
    rewrites = rewrite_codes(row.signature, workload)
    codes = [OfferedCode(b.value, backend_code(b, row.signature)) for b in ALL_BACKENDS]
    codes += [OfferedCode(v, rewrites[v], REWRITE_NUMERICS.get(v, "")) for v in variants]
    return CodesToCheck(workload, row.signature.device, row.signature, call_mask_form(row), tuple(codes))


def checked_codes(calls: dict[int, CodesToCheck], notes: list[str], describe: Callable[[int], str],
                  timeout_s: float) -> dict[int, dict[str, str]]:
    """Each row's codes run against its call (``engine/costs/code_check.py``, one child process for all): those that gave
    the call's output, by name; a note for the others, with why."""
    out = {}
    for (i, call), checks in zip(calls.items(), check_codes(list(calls.values()), timeout_s)):
        out[i] = {c.name: c.code for c in call.codes if checks[c.name].offered}
        notes += _refusal_notes(describe(i), checks)
    return out


def _refusal_notes(what: str, checks: dict[str, CodeCheck]) -> list[str]:
    """One note per reason: the codes it refused, named."""
    refused: dict[str, list[str]] = {}
    for name, check in checks.items():
        if not check.offered:
            refused.setdefault(check.why, []).append(name)
    return [f"{what}: the code of {', '.join(names)}: {why}" for why, names in refused.items()]


def flex_costs(specs: dict[int, FlexSpec], say: Callable[[str], None], notes: list[str],
               describe: Callable[[int], str], timeout_s: float) -> dict[int, Measured]:
    """FlexAttention at each row's lab workload (one child process for all; equal specs measured once): its code run
    and compared with the call's output first (``engine/costs/flex_cost.py``)."""
    if not specs:
        return {}
    unique = list(dict.fromkeys(specs.values()))
    say(f"sdpa-tui watch: measuring FlexAttention (compiled) at {len(unique)} workload(s)")
    answers = dict(zip(unique, measure_flex(unique, timeout_s)))
    out = {}
    for i, spec in specs.items():
        cost, why = answers[spec]
        if cost is None:
            notes.append(f"{describe(i)}: FlexAttention not offered: {why}")
        else:
            out[i] = flex_alternative(cost, spec)
            if cost.note:
                notes.append(f"{describe(i)}: FlexAttention {cost.note}")
    return out


def padded_spec(row: CallRow, workload: Workload) -> PackedSpec | str | None:
    """Packed attention's spec for a padded row, on the lengths of its typical sampled batch; why not; or None (not a
    padded call). The once-per-batch part is spread over the row's modules: a model builds one mask per forward and
    each of its attention modules makes one call with it."""
    histogram = typical(row.lengths, workload.kv_seq)
    return packed_spec(workload, row.signature, call_mask_form(row), from_histogram(histogram) if histogram else (),
                       calls_per_batch=row.module_count, layouts=row.layouts)


def packed_costs(specs: dict[int, PackedSpec], say: Callable[[str], None], notes: list[str],
                 describe: Callable[[int], str], timeout_s: float) -> dict[int, list[Measured]]:
    """Packed attention at each padded row's lengths (one child process for all; equal specs measured once): each
    code run and compared with the call's output on the real rows first (``engine/costs/packed_cost.py``). A reason
    shared by several rows (this torch has no varlen_attn) is one note."""
    if not specs:
        return {}
    unique = list(dict.fromkeys(specs.values()))
    say(f"sdpa-tui watch: measuring packed attention (varlen_attn, nested jagged SDPA) at {len(unique)} workload(s)")
    answers = dict(zip(unique, measure_packed(unique, timeout_s)))
    out: dict[int, list[Measured]] = {}
    refused: dict[tuple[str, str], list[str]] = {}
    for i, spec in specs.items():
        for name, (cost, why) in answers[spec].items():
            if cost is None:
                refused.setdefault((name, why), []).append(describe(i))
                continue
            out.setdefault(i, []).append(packed_alternative(name, cost, spec))
            if cost.note:
                notes.append(f"{describe(i)}: {LABELS[name]} {cost.note}")
    for (name, why), rows in refused.items():
        notes.append(f"{rows[0] if len(rows) == 1 else f'{len(rows)} signatures'}: {LABELS[name]} not offered: {why}")
    return out


def call_mask_form(row: CallRow) -> str:
    """The row's mask form; a call with no mask needs no reading of it."""
    if row.mask_form:
        return row.mask_form
    return ("" if row.signature.mask != "none" else mask_forms.CAUSAL if row.signature.causal else mask_forms.NONE)


def default_budget_s(run_s: float) -> float:
    """The alternatives' measuring budget for a program that ran ``run_s``: :data:`ADVICE_BUDGET_S`, or
    :data:`ADVICE_BUDGET_SHARE` of its run where that is longer."""
    return max(ADVICE_BUDGET_S, ADVICE_BUDGET_SHARE * run_s)


def _settled(report: WatchReport, items: list[tuple[int, str, Workload, list[str]]]) -> Callable[[int, Session], bool]:
    """Whether the lab may move on from ``items[index]``: a rewrite, or a call's workload where no backend is
    undecided against the one the call ran."""
    def settled(index: int, session: Session) -> bool:
        row, variant = report.rows[items[index][0]], items[index][1]
        return bool(variant) or not undecided_backends(session, row.backend, refused_backends(row.why_not))
    return settled


def measure_advice(report: WatchReport, say: Callable[[str], None] | None = None, flex: bool = True,
                   progress: Callable[[AdviceProgress], None] | None = None, budget_s: float | None = None) -> None:
    """Fill ``report.advice`` (one per row, None where there is none) and ``report.run_advice``; say how it went and,
    to ``progress``, where it stands (both on stderr where neither is given). ``flex``: measure FlexAttention too (it
    leaves SDPA; it compiles for seconds per shape). ``budget_s`` (:func:`default_budget_s` where None): past it, the
    workload measured ends as soon as its backends have their samples (:data:`OVER_BUDGET_SHARE`), and nothing more
    starts; what was left is said in the note. Each signature's own workload is measured before any rewrite, the busiest signature first."""
    printer = StderrProgress() if say is None and progress is None else None
    say = say or (printer.say if printer else (lambda text: print(text, file=sys.stderr, flush=True)))
    progress = progress or printer or (lambda _: None)
    budget = default_budget_s(report.duration_s) if budget_s is None else budget_s
    started = time.monotonic()
    deadline = started + budget
    advice: list[SignatureAdvice | None] = [None] * len(report.rows)
    notes: list[str] = []
    by_device: dict[str, list[tuple[int, str, Workload, list[str]]]] = {}
    flex_specs: dict[int, FlexSpec] = {}
    packed_specs: dict[int, PackedSpec] = {}
    unpacked: list[str] = []  # why packed attention is measured nowhere in the run (the CPU): one line each
    changes: dict[int, list[tuple[str, Workload]]] = {}
    to_check: dict[int, CodesToCheck] = {}
    for i, row in enumerate(report.rows):
        try:
            workload, differences = lab_workload(row.signature)
        except WorkloadError as exc:
            notes.append(f"{row.signature.describe()}: {exc}")
            continue
        if not row.compiled:
            padded = padded_spec(row, workload)
            if isinstance(padded, PackedSpec):
                workload = padded.workload  # the lab measures SDPA on the call's own lengths too
                if (why_not := packed_refusal(row.signature.device)) is None:
                    packed_specs[i] = padded
                elif why_not not in unpacked:
                    unpacked.append(why_not)
            elif padded is not None:
                notes.append(f"{row.signature.describe()}: packed attention not offered: {padded}")
        by_device.setdefault(row.signature.device, []).append((i, "", workload, differences))
        # a rewrite inside a compiled graph is not what the graph would run: not measured
        changes[i] = [] if row.compiled else rewritten(row.mask_causal, workload)
        to_check[i] = codes_to_check(row, workload, [variant for variant, _ in changes[i]])
        if flex and not row.compiled:
            spec = flex_spec(workload, row.signature.device, call_mask_form(row))
            if isinstance(spec, str):
                notes.append(f"{row.signature.describe()}: FlexAttention not offered: {spec}")
            else:
                flex_specs[i] = spec
    notes += [f"packed attention not offered for the padded calls: {why}" for why in unpacked]
    if to_check:
        say(f"sdpa-tui watch: running the advice's code against {len(to_check)} call(s) before it is offered")
    checking = time.monotonic()
    checked = checked_codes(to_check, notes, lambda i: report.rows[i].signature.describe(),
                            max(CODE_CHECK_AT_LEAST_S, budget))
    # not out of the budget: its child's import of torch alone took 9 s on an H100 box, most of a 20 s budget
    check_s = time.monotonic() - checking
    deadline += check_s
    for items in by_device.values():  # the rewrites whose code gave the call's output
        items += [(i, variant, changed, differences) for i, _, _, differences in list(items)
                  for variant, changed in changes[i] if variant in checked[i]]
    numbers = {i: n for n, i in enumerate(sorted({i for items in by_device.values() for i, *_ in items}), 1)}

    def told(i: int, what: str) -> None:
        progress(AdviceProgress(numbers[i], len(numbers), what, deadline - time.monotonic()))

    for device, items in by_device.items():
        items.sort(key=lambda item: bool(item[1]))  # every signature's own workload before the rewrites
        say(f"sdpa-tui watch: measuring alternatives: {len({i for i, *_ in items})} signature(s) on {device} "
            f"(budget {budget:.0f} s)")
        measured: dict[int, tuple[Session, list[str]]] = {}
        rewrites: dict[int, list[Rewrite]] = {}
        done = 0

        def on_step(step: SeriesProgress) -> None:
            i, variant, workload, _ = items[step.index]
            told(i, f"{'SDPA backends' if not variant else 'rewrite ' + variant} at {workload.describe()}" if step.ready
                 else f"starting the lab's engine on {device}")

        try:
            for (i, variant, _, differences), session in zip(items, measure_series(
                    [w for _, _, w, _ in items], ALL_BACKENDS, device=device, duration_s=SECONDS_PER_SIGNATURE,
                    timeout_s=TIMEOUT_PER_SIGNATURE_S, settled=_settled(report, items),
                    longest_s=UNDECIDED_LONGEST_S, on_progress=on_step,
                    deadline=deadline - (PACKED_RESERVE_S if any(s.device == device for s in packed_specs.values())
                                         else 0.0),
                    deadline_grace_s=OVER_BUDGET_SHARE * budget)):
                done += 1
                if variant:
                    rewrites.setdefault(i, []).append(Rewrite(variant, checked[i][variant], session,
                                                              exact=variant != "bf16"))
                else:
                    measured[i] = (session, differences)
        except EngineFailed as exc:
            notes.append(f"the alternatives on {device} were not measured: {exc}")
        else:
            if done < len(items):
                left = items[done:]
                notes.append(f"the budget of {budget:.0f} s ran out on {device} before "
                             f"{_left_words(left)} (--advice-budget SECONDS gives more)")
        device_flex = {i: spec for i, spec in flex_specs.items() if spec.device == device and i in measured}
        if device_flex and deadline - time.monotonic() < FLEX_AT_LEAST_S:
            notes.append(f"FlexAttention not measured: less than {FLEX_AT_LEAST_S:.0f} s of the budget of {budget:.0f} s "
                         "was left for it to compile (--advice-budget SECONDS gives more)")
            device_flex = {}
        if device_flex:
            told(next(iter(device_flex)), "FlexAttention: its code run, compared with the call's output, timed")
        flexed = flex_costs(device_flex, say, notes, lambda i: report.rows[i].signature.describe(),
                            max(1.0, deadline - time.monotonic()))
        device_packed = {i: spec for i, spec in packed_specs.items() if spec.device == device and i in measured}
        if device_packed and deadline - time.monotonic() < PACKED_AT_LEAST_S:
            notes.append(f"packed attention not measured: less than {PACKED_AT_LEAST_S:.0f} s of the budget of "
                         f"{budget:.0f} s was left (--advice-budget SECONDS gives more)")
            device_packed = {}
        if device_packed:
            told(next(iter(device_packed)), "packed attention: its code run, compared on the real rows, timed")
        packed = packed_costs(device_packed, say, notes, lambda i: report.rows[i].signature.describe(),
                              max(1.0, deadline - time.monotonic()) + OVER_BUDGET_SHARE * budget)
        for i, (session, differences) in measured.items():
            row = report.rows[i]
            outside = ([flexed[i]] if i in flexed else []) + packed.get(i, [])
            advice[i] = advise(session, row.backend, row.signature.priority, differences, rewrites.get(i, ()),
                               refused_backends(row.why_not), outside,
                               {b.value: checked[i][b.value] for b in ALL_BACKENDS if b.value in checked[i]},
                               row.host_lead)
            if row.compiled:
                advice[i] = compiled_advice(advice[i], row.eager_backend)
                spec = cost_spec(row, row.eager_twin)
                if spec is None:
                    continue
                if deadline - time.monotonic() < FLEX_AT_LEAST_S:
                    notes.append(f"{row.signature.describe()} [compiled]: not measured alone: the budget ran out")
                    continue
                told(i, "the compiled call alone")
                say(f"sdpa-tui watch: compiling {row.signature.describe()} alone to measure it")
                cost, why = measure_compiled(spec, max(1.0, deadline - time.monotonic()))
                if cost is not None:
                    advice[i] = replace(advice[i], compiled_cost=cost)
                else:
                    notes.append(f"{row.signature.describe()} [compiled]: not measured alone: {why}")
    if printer is not None:
        printer.clear()
    report.advice = advice
    report.run_advice = run_advice(
        (row.signature.describe(), row.count, a) for row, a in zip(report.rows, advice) if a is not None)
    advised = sum(a is not None for a in advice)
    report.advice_measured = (f"alternatives measured after the program exited: {advised} signature(s), "
                              f"{time.monotonic() - started - check_s:.1f} s of a {budget:.0f} s budget"
                              + (f" (and {check_s:.1f} s running the codes against their calls first)" if to_check
                                 else ""))
    report.advice_left_out = notes


def _left_words(left: list[tuple[int, str, Workload, list[str]]]) -> str:
    own = len({i for i, variant, *_ in left if not variant})
    rewrites = sum(bool(variant) for _, variant, *_ in left)
    parts = ([f"{own} signature(s)"] if own else []) + ([f"{rewrites} rewrite(s)"] if rewrites else [])
    return " and ".join(parts) + " were measured"
