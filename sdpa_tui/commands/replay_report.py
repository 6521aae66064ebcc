"""``sdpa-tui report --inputs FOLDER``: a call saved by ``watch`` (its repro folder) measured and checked on every
backend, forward and backward, on its own tensors: what the lab's random workload cannot reach."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from ..core.calls.gradient_check import GRADIENTS, replay_advice
from ..watch.advice.replay_client import replay_saved_calls
from .exit_codes import EXIT_ENGINE, EXIT_USAGE

RESULT_STYLE = {"clean": "green", "non-finite": "bold red", "out of tolerance": "bold red", "error": "red",
                "not eligible": "dim"}


def run_inputs_report(args: argparse.Namespace) -> int:
    out, err = Console(), Console(stderr=True)
    with err.status("replaying the saved call on every backend", spinner="dots"):
        answer = replay_saved_calls([args.inputs])[0]
    if answer.error:
        err.print(f"sdpa-tui: error: {answer.error}", markup=False, highlight=False, soft_wrap=True)
        return EXIT_USAGE if answer.bad_input else EXIT_ENGINE
    shapes = ", ".join(f"{n} {s}" for n, s in answer.shapes.items())
    out.print(f"[bold]{args.inputs}[/]: {shapes} {answer.dtype.removeprefix('torch.')} on {answer.device}"
              + (f", ran {answer.backend} in the program" if answer.backend else ""), highlight=False)
    if answer.note:
        out.print(answer.note, style="yellow")
    table = Table(box=None, pad_edge=False)
    for name, justify in (("backend", "left"), ("result", "left"), ("fwd+bwd", "right"),
                          *((f"{g} err", "right") for g in GRADIENTS), ("detail", "left")):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for r in answer.replays:
        errors = [f"{r.max_rel_error[g]:.1e}" if g in r.max_rel_error else "" for g in GRADIENTS]
        table.add_row(r.backend, f"[{RESULT_STYLE.get(r.result, '')}]{r.result}[/]",
                      f"{r.us:,.1f} µs" if r.us is not None else "", *errors, r.detail)
    out.print(table)
    if not all(r.clean or r.result == "not eligible" for r in answer.replays):
        out.print("advice: " + replay_advice(answer.replays, answer.backend or None), markup=False, highlight=False)
    return 0
