"""Can the correctness checks' cold start leave the program's thread? (issue 39: on an H200 the checks' first run, its
float64 kernels loaded op by op, was 0.25 to 0.31 s of the 10-s decoder's 0.38 s added loop.) torch's Python bindings
release the GIL while an op runs; so a tiny check on a thread of its own might load those kernels while the program's
thread goes on with its steps. Measured on an H200 (2026-11-29, docs/lab-notes/watch-truth.md): it does not; the
steps beside the thread slowed by as much as the checks had cost.

In a fresh process: ``training.py``'s decoder is built and stepped twice, the decoder's SDPA call ([8, 8, 1024, 128]
bf16 causal, forward and gradients) made ready; then, timed on the program's thread, STEPS training steps and both
checks (``output_check.check_output``, ``gradient_reference.relative_errors``) on that call, as:

- ``none``: the steps alone (no check);
- ``main``: the steps, then both checks cold on the program's thread (what watch does now);
- ``thread``: a thread started first runs both checks on a [1, 1, 16, 128] slice of the call (on a stream of its
  own) while the program's thread runs the steps; then the program's thread waits for it, and runs both checks;
- ``start-up``: watch's warm-up (``watch/probe/checks/kernel_warm_up.py``) started once the context is made, so it
  loads the checks' kernels while the program's thread builds the decoder and AdamW (whose construction imports
  ``torch._dynamo``: seconds of Python); then the steps and both checks as in ``main``.

In every mode the context is made first and the build after it is timed (``build_s``: does the warm-up beside it
slow the program's start-up?).

Each a fresh process, alternated over ROUNDS; one JSON line each, then the medians: what the program's thread spent
beyond ``none``'s steps is the checks' cost to it.

    python3 scripts/diagnostics/diag_check_warmup.py [--rounds 3] [--steps 30]     # on a CUDA machine
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

from alternated import alternated_runs

ROOT = Path(__file__).resolve().parents[2]
MODES = ("none", "main", "thread", "start-up")


def child(mode: str, steps: int) -> dict:
    import torch
    import torch.nn.functional as F

    from sdpa_tui.core.calls.watched_calls import OutputCheck
    from sdpa_tui.watch.probe.checks import gradient_reference, output_check
    from sdpa_tui.watch.probe.checks.gradient_sentinel import CallTensors
    from sdpa_tui.watch.probe.checks.kernel_warm_up import KernelWarmUp

    sys.path.insert(0, str(ROOT / "tests" / "watch_programs"))
    import training  # its definitions only

    def sync() -> None:
        torch.cuda.synchronize()

    def checks(t: tuple) -> None:
        q, k, v, out, grad_out, grads = t
        output_check.check_output(OutputCheck(), out, q, k, v, None, 0.0, True, None, False)
        gradient_reference.relative_errors(CallTensors(q, k, v, None, 0.0, True, None, False, grad_out, grads))

    torch.manual_seed(0)
    torch.zeros(1, device="cuda")  # the context
    warm = KernelWarmUp(lambda: False)
    if mode == "start-up":
        warm.start()
    built = time.perf_counter()
    loss_of, optimizer, (batch, seq) = training.decoder("cuda")
    build_s = time.perf_counter() - built
    warmed = warm.warmed if mode == "start-up" and warm.done.wait(30.0) else 0
    tokens = torch.randint(0, training.VOCAB, (batch, seq), device="cuda")

    def step() -> None:
        loss_of(tokens).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(2):
        step()
    q, k, v = (torch.randn(8, 8, 1024, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    grad_out = torch.randn_like(out)
    grads = torch.autograd.grad(out, (q, k, v), grad_out)
    call = (q.detach(), k.detach(), v.detach(), out.detach(), grad_out, grads)
    tiny = (*(t[:1, :1, :16].clone() for t in call[:5]), tuple(g[:1, :1, :16].clone() for g in grads))
    sync()
    thread_s = [0.0]

    def warm_up() -> None:
        t0 = time.perf_counter()
        with torch.cuda.stream(torch.cuda.Stream()):
            checks(tiny)
            sync()
        thread_s[0] = time.perf_counter() - t0

    t0 = time.perf_counter()
    worker = threading.Thread(target=warm_up) if mode == "thread" else None
    if worker:
        worker.start()
    for _ in range(steps):
        step()
    sync()
    stepped = time.perf_counter()
    if worker:
        worker.join()
    joined = time.perf_counter()
    if mode != "none":
        checks(call)
        sync()
    ended = time.perf_counter()
    return {"mode": mode, "build_s": build_s, "warmed": warmed, "steps_s": stepped - t0, "wait_s": joined - stepped, "checks_s": ended - joined,
            "program_thread_s": ended - t0, "thread_s": thread_s[0], "device": torch.cuda.get_device_name()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.steps)), flush=True)
        return 0
    runs = alternated_runs(__file__, MODES, args.rounds, ["--steps", str(args.steps)], digits=4)
    baseline = statistics.median(run["steps_s"] for run in runs["none"])
    print(f"{args.steps} steps and the checks, medians over {args.rounds} rounds, s")
    print(f"{'mode':<8}{'build':>9}{'steps':>9}{'wait':>9}{'checks':>9}{'thread':>9}{'program thread':>16}{'beyond none':>13}")
    for m in MODES:
        med = {k: statistics.median(run[k] for run in runs[m]) for k in
               ("build_s", "steps_s", "wait_s", "checks_s", "thread_s", "program_thread_s")}
        print(f"{m:<8}{med['build_s']:>9.3f}{med['steps_s']:>9.3f}{med['wait_s']:>9.3f}{med['checks_s']:>9.3f}{med['thread_s']:>9.3f}"
              f"{med['program_thread_s']:>16.3f}{med['program_thread_s'] - baseline:>+13.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
