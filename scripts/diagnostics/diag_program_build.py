"""Where ``tests/watch_programs/training.py``'s start-up goes before its first step (issue 39: on H200s the 10-s
program's start-up filled the target, so it ran three steps): torch's import, the device's context, the model and its
optimizer built, the first step. torch.optim's constructors are wrapped by ``torch._disable_dynamo``, whose first call
imports ``torch._dynamo``; so each run is one of:

- ``as-training``: the model and optimizer built as training.py builds them (the import inside the optimizer's
  construction);
- ``dynamo-first``: ``torch._dynamo`` imported on its own first, then the same build.

Each run a fresh process, the variants alternated over ROUNDS rounds; each prints one JSON line, then a table of
the medians [min..max], seconds.

    python3 scripts/diagnostics/diag_program_build.py [--device cuda] [--size decoder] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from alternated import alternated_runs

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "watch_programs"
VARIANTS = ("as-training", "dynamo-first")
PHASES = ("torch_import_s", "context_s", "dynamo_import_s", "build_s", "first_step_s", "to_first_step_s")


def child(variant: str, device: str, size: str) -> dict:
    """One fresh process's start-up, timed phase by phase (the device synchronised after each)."""
    started = time.time()
    import torch

    def synced() -> float:
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.time()

    imported = time.time()
    dynamo_with_torch = "torch._dynamo" in sys.modules
    if device.startswith("cuda"):
        torch.empty(0, device=device)
    ready = synced()
    if variant == "dynamo-first":
        import torch._dynamo  # noqa: F401 - what the optimizer's construction imports, timed on its own
    dynamo = time.time()
    sys.path.insert(0, str(PROGRAMS))
    import training  # its definitions only: it runs under ``__main__``

    torch.manual_seed(0)
    loss_of, optimizer, (batch, seq) = (training.decoder(device) if size == "decoder"
                                        else training.llama(size, device))
    tokens = torch.randint(0, training.VOCAB, (batch, seq), device=device)
    built = synced()
    loss_of(tokens).backward()
    optimizer.step()
    stepped = synced()
    return {"variant": variant, "torch_import_s": imported - started, "context_s": ready - imported,
            "dynamo_import_s": dynamo - ready, "build_s": built - dynamo, "first_step_s": stepped - built,
            "to_first_step_s": stepped - started, "dynamo_with_torch": dynamo_with_torch}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--size", default="decoder", choices=("decoder", "large", "tiny"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.device, args.size)), flush=True)
        return 0
    runs = alternated_runs(__file__, VARIANTS, args.rounds, ["--device", args.device, "--size", args.size])
    print(f"{args.size} on {args.device}, {args.rounds} rounds: medians [min..max], s")
    print(f"{'phase':<16}" + "".join(f"{v:>26}" for v in VARIANTS))
    for phase in PHASES:
        cells = []
        for v in VARIANTS:
            xs = [run[phase] for run in runs[v]]
            cells.append(f"{statistics.median(xs):.3f} [{min(xs):.2f}..{max(xs):.2f}]")
        print(f"{phase.removesuffix('_s'):<16}" + "".join(f"{c:>26}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
