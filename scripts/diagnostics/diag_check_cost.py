"""What watch's correctness checks cost one call, cold and warm (issue 39: after the gradient reference went into
blocks, the checks still added about 0.3 s to the decoder's first training step on an H100).

In a fresh process, on the decoder's call ([8, 8, 1024, 128] bf16, causal; on the CPU [2, 4, 32, 16] float32): the
forward check (``output_check.check_output``) and the gradient comparison (``gradient_reference.relative_errors``)
timed three times each, the device synchronised before and after each. The first is cold (its float64 kernels
loaded, its memory allocated), the others warm: if the first is most of the cost, the checks pay a one-time start,
not their arithmetic. Each round runs three fresh processes: ``bare`` (the call alone before the checks), ``program``
(a bf16 linear layer's forward and backward first, as a model's layers would have run: cuBLAS is set up) and ``tiny``
(as ``program``, then both checks once on a [1, 1, 16, head dim] call, timed apart: does a small warm-up take the
cold cost?). One JSON line per process, then medians.

    python3 scripts/diagnostics/diag_check_cost.py [--device cuda] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

MODES = ("bare", "program", "tiny")


def child(device: str, mode: str) -> dict:
    import torch
    import torch.nn.functional as F

    from sdpa_tui.core.calls.watched_calls import OutputCheck
    from sdpa_tui.watch.probe.checks import gradient_reference, output_check
    from sdpa_tui.watch.probe.checks.gradient_sentinel import CallTensors

    cuda = device.startswith("cuda")
    shape, dtype = ((8, 8, 1024, 128), torch.bfloat16) if cuda else ((2, 4, 32, 16), torch.float32)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    gen = torch.Generator(device=device).manual_seed(0)
    if mode in ("program", "tiny"):  # a model's layers run before its attention: cuBLAS is set up
        layer = torch.nn.Linear(shape[-1], shape[-1], device=device, dtype=dtype)
        layer(torch.randn(64, shape[-1], device=device, dtype=dtype, generator=gen, requires_grad=True)).sum().backward()
        sync()
    q, k, v = (torch.randn(shape, device=device, dtype=dtype, generator=gen, requires_grad=True) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    grad_out = torch.randn(shape, device=device, dtype=dtype, generator=gen)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), grad_out)
    sync()
    warm_up = []
    if mode == "tiny":
        small = tuple(t[:1, :1, :16].detach().clone() for t in (q, k, v, out, grad_out, dq, dk, dv))
        t0 = time.perf_counter()
        output_check.check_output(OutputCheck(), small[3], *small[:3], None, 0.0, True, None, False)
        sync()
        warm_up.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        gradient_reference.relative_errors(CallTensors(*small[:3], None, 0.0, True, None, False, small[4], small[5:]))
        sync()
        warm_up.append(time.perf_counter() - t0)
    forward, backward = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        output_check.check_output(OutputCheck(), out.detach(), q.detach(), k.detach(), v.detach(), None, 0.0, True,
                                  None, False)
        sync()
        forward.append(time.perf_counter() - t0)
        tensors = CallTensors(q.detach(), k.detach(), v.detach(), None, 0.0, True, None, False, grad_out, (dq, dk, dv))
        t0 = time.perf_counter()
        errors = gradient_reference.relative_errors(tensors)
        sync()
        backward.append(time.perf_counter() - t0)
    return {"device": torch.cuda.get_device_name() if cuda else "cpu", "torch": torch.__version__, "mode": mode,
            "tiny_warm_up_s": warm_up, "forward_s": forward, "gradients_s": backward, "errors": errors}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.device, args.child)), flush=True)
        return 0
    runs: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for _ in range(args.rounds):
        for mode in MODES:
            proc = subprocess.run([sys.executable, __file__, "--child", mode, "--device", args.device],
                                  capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                print(proc.stderr[-2000:], file=sys.stderr)
                return 1
            runs[mode].append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(json.dumps(runs[mode][-1]), flush=True)
    print(f"{'mode':<8} {'check':<10} {'tiny first':>10} {'cold':>8} {'warm':>8}   (ms, medians of {args.rounds} processes)")
    for mode, done in runs.items():
        for i, name in enumerate(("forward_s", "gradients_s")):
            tiny = f"{statistics.median(r['tiny_warm_up_s'][i] for r in done) * 1e3:.1f}" if mode == "tiny" else "-"
            cold, warm = (statistics.median(r[name][j] for r in done) * 1e3 for j in (0, 1))
            print(f"{mode:<8} {name[:-2]:<10} {tiny:>10} {cold:>8.1f} {warm:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
