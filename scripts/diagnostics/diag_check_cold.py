"""Where the forward check's first run goes in a warmed-up training process (issue 39: on an H200 the decoder's first
check cost about 0.25 s, nearly all of it a one-time start, against 4 ms warm).

Each run is a fresh process. It first does what the decoder's first step leaves warm (bf16 linear layers forward and
backward, SDPA on the decoder's [8, 8, 1024, 128] bf16 causal call forward and backward, a cross entropy, AdamW's
step), then, in DTYPE (float64: the check's reference; float32: would it start faster?), times each piece of the
reference on that call, the GPU synchronised around each: the inputs' copy, the scores' matmul, the causal mask, the
softmax, the second matmul, the comparison with the call's output, and ``isfinite().all()``; then the same pieces
again (warm). ``check`` runs watch's own forward check (``output_check.check_output``) cold and warm instead. Prints
one JSON line per run; then the medians.

    python3 scripts/diagnostics/diag_check_cold.py [--rounds 3] [--variants float64,float32,check]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("float64", "float32", "check")


def warm_up():
    import torch
    import torch.nn.functional as F

    dev = "cuda"
    torch.manual_seed(0)
    layer = torch.nn.Linear(1024, 1024, device=dev, dtype=torch.bfloat16)
    head = torch.nn.Linear(1024, 1024, device=dev, dtype=torch.bfloat16)
    opt = torch.optim.AdamW([*layer.parameters(), *head.parameters()])
    x = torch.randn(8, 1024, 1024, device=dev, dtype=torch.bfloat16)
    q, k, v = (torch.randn(8, 8, 1024, 128, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    h = layer(x) + out.transpose(1, 2).reshape(8, 1024, 1024)
    logits = head(torch.nn.functional.rms_norm(h, (1024,)))
    loss = F.cross_entropy(logits.view(-1, 1024), torch.randint(0, 1024, (8 * 1024,), device=dev))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    return q.detach(), k.detach(), v.detach(), out.detach()


def timed(pieces: dict, name: str, fn):
    import torch

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    result = fn()
    torch.cuda.synchronize()
    pieces[name] = round((time.perf_counter() - t0) * 1e3, 2)
    return result


def reference_pieces(q, k, v, out, dtype) -> dict:
    import torch

    pieces: dict = {}
    qd = timed(pieces, "copy", lambda: q.to(dtype))
    kd, vd = k.to(dtype), v.to(dtype)
    scores = timed(pieces, "matmul", lambda: (qd @ kd.transpose(-2, -1)) * q.shape[-1] ** -0.5)
    rows, keys = scores.shape[-2:]
    masked = timed(pieces, "causal_mask", lambda: scores.masked_fill(
        torch.ones(rows, keys, dtype=torch.bool, device=q.device).triu(1), float("-inf")))
    probs = timed(pieces, "softmax", lambda: torch.softmax(masked, dim=-1))
    ref = timed(pieces, "matmul_v", lambda: probs @ vd)
    timed(pieces, "compare", lambda: float((out.to(dtype) - ref).abs().amax() / ref.abs().amax()))
    timed(pieces, "isfinite", lambda: bool(torch.isfinite(out).all()))
    return pieces


def child(variant: str) -> None:
    t0 = time.perf_counter()
    import torch

    q, k, v, out = warm_up()
    got = {"variant": variant, "warm_up_s": round(time.perf_counter() - t0, 2)}
    if variant == "check":
        from sdpa_tui.core.calls.watched_calls import OutputCheck
        from sdpa_tui.watch.probe.checks import output_check

        for when in ("cold", "warm"):
            check = OutputCheck()
            torch.cuda.synchronize()
            t = time.perf_counter()
            output_check.check_output(check, out, q, k, v, None, 0.0, True, None, False)
            torch.cuda.synchronize()
            got[when] = {"check": round((time.perf_counter() - t) * 1e3, 2), "ok": check.ok}
    else:
        dtype = getattr(torch, variant)
        got["cold"] = reference_pieces(q[:1], k[:1], v[:1], out[:1], dtype)
        got["warm"] = reference_pieces(q[:1], k[:1], v[:1], out[:1], dtype)
    print(json.dumps(got), flush=True)


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    runs: dict[str, list[dict]] = {}
    for r in range(args.rounds):
        for v in args.variants.split(","):
            proc = subprocess.run([sys.executable, __file__, "--child", v], capture_output=True, text=True, cwd=ROOT,
                                  timeout=300)
            if proc.returncode != 0:
                sys.exit(f"{v} failed:\n{proc.stderr[-3000:]}")
            line = proc.stdout.strip().splitlines()[-1]
            print(line, flush=True)
            runs.setdefault(v, []).append(json.loads(line))
    for v, rs in runs.items():
        for when in ("cold", "warm"):
            names = rs[0][when].keys()
            cells = {n: statistics.median(r[when][n] for r in rs) for n in names if n != "ok"}
            print(f"{v:<8} {when}: " + ", ".join(f"{n} {c:.1f} ms" for n, c in cells.items())
                  + f"; sum {sum(cells.values()):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
