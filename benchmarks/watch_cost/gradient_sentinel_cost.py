"""What watch's backward sentinel costs a training step (``sdpa_tui/watch/probe/checks/gradient_sentinel.py``).

A transformers Llama from a config (random weights) trains on a padded batch (a bool mask: every layer's SDPA
call records autograd, so each is a sentinel candidate) in one process, the variants alternated step by step
within each round so the machine's drift falls on all alike:

- ``plain``: torch's own SDPA;
- ``wrapper``: watch's wrapper, the sentinel never due (what watch costs without it);
- ``sentinel``: the wrapper with the sentinel at its default sampling (the first call of a signature, then every
  ``SAMPLE_EVERY``-th);
- ``every call``: the sentinel on every call: (every call - wrapper) / SDPA calls per step is one sampled
  backward's cost (its host and GPU time together).

The probe runs without profiler windows (they are watch's other cost, measured by watch_step_cost.py); the float64
comparison is off here (it samples at the forward check's sparse cadence and waits for the GPU: measured apart by
``--compare``, one sampled call's comparison timed alone). Prints a table and writes JSON.

    python3 benchmarks/watch_cost/gradient_sentinel_cost.py --device cuda --steps 40 --rounds 5 --json out.json

``--one-call`` instead splits one call's cost, plain against sampled, under torch.profiler: the host's time to
issue the forward and backward (no synchronize in it), the GPU's kernel time per call, and the operators and
CUDA runtime calls the sampled call adds, the costliest first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from sdpa_tui.watch.probe.checks import gradient_reference, gradient_sentinel, output_check  # noqa: E402
from sdpa_tui.watch.probe.install import install  # noqa: E402

VARIANTS = ("plain", "wrapper", "sentinel", "every call")


def model_and_batch(device: str, dtype: torch.dtype, batch: int, seq: int, layers: int):
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=4096, hidden_size=1024, intermediate_size=2816, num_hidden_layers=layers, num_attention_heads=16,
        num_key_value_heads=4, max_position_embeddings=seq, attn_implementation="sdpa")).to(device, dtype)
    ids = torch.randint(0, 4096, (batch, seq), device=device)
    keep = torch.ones_like(ids)
    keep[0, : seq // 4] = 0
    keep[-1, : seq // 2] = 0
    return model, ids, keep, ids.masked_fill(keep == 0, -100)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--steps", type=int, default=40, help="steps of each variant per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--one-call", action="store_true", help="split one call's host and GPU time instead")
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    if args.one_call:
        return split_one_call(args)
    model, ids, keep, labels = model_and_batch(args.device, dtype, args.batch, args.seq, args.layers)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    original = F.scaled_dot_product_attention
    install(None, kernel_bursts=False)
    wrapper = F.scaled_dot_product_attention
    default_due, never, always = gradient_sentinel.due, (lambda count: False), (lambda count: True)
    max_checks, output_check.MAX_CHECKS = output_check.MAX_CHECKS, 0  # float64 comparisons: timed apart
    setups = {"plain": (original, default_due), "wrapper": (wrapper, never), "sentinel": (wrapper, default_due),
              "every call": (wrapper, always)}
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)

    def step() -> float:
        sync()
        t0 = time.perf_counter()
        loss = model(ids, attention_mask=keep, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        sync()
        return (time.perf_counter() - t0) * 1e3

    for name in VARIANTS:  # warm every path (plans, the sentinel's pinned buffers)
        F.scaled_dot_product_attention, gradient_sentinel.due = setups[name]
        for _ in range(3):
            step()
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    rounds = []
    for r in range(args.rounds):
        per_round: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for _ in range(args.steps):
            for name in (VARIANTS if r % 2 == 0 else VARIANTS[::-1]):
                F.scaled_dot_product_attention, gradient_sentinel.due = setups[name]
                per_round[name].append(step())
        rounds.append({v: statistics.median(t) for v, t in per_round.items()})
        for v in VARIANTS:
            times[v].extend(per_round[v])
    F.scaled_dot_product_attention, gradient_sentinel.due = original, default_due
    calls = args.layers  # one SDPA call per layer and step
    med = {v: statistics.median(t) for v, t in times.items()}
    per_sample_ms = (med["every call"] - med["wrapper"]) / calls
    default_share = per_sample_ms * calls / gradient_sentinel.SAMPLE_EVERY / med["plain"]
    compare_ms = time_one_comparison(args.device, dtype, args.batch, args.seq, sync)
    plain_us, tapped_us = time_one_sample(args.device, dtype, args.batch, args.seq, sync)
    result = {
        "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
        "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "args": vars(args),
        "sdpa_calls_per_step": calls, "sample_every": gradient_sentinel.SAMPLE_EVERY,
        "median_step_ms": med, "rounds": rounds,
        "sampled_backward_ms": per_sample_ms,
        "sentinel_share_of_step_at_default_sampling": default_share,
        "measured_sentinel_vs_wrapper": med["sentinel"] / med["wrapper"] - 1,
        "float64_comparison_ms": compare_ms,
        "one_call_fwd_bwd_us": {"plain": plain_us, "sampled": tapped_us},
        "sampled_call_extra_us": tapped_us - plain_us,
        "share_of_step_at_default_sampling_from_one_call":
            (tapped_us - plain_us) * calls / gradient_sentinel.SAMPLE_EVERY / (med["plain"] * 1e3),
    }
    print(f"{result['device']}, torch {torch.__version__}: Llama {args.layers} layers, batch {args.batch} x "
          f"{args.seq}, {args.dtype}, {args.rounds} rounds x {args.steps} steps per variant")
    for v in VARIANTS:
        spread = [r[v] for r in rounds]
        print(f"  {v:11} median step {med[v]:8.2f} ms   (rounds {min(spread):.2f}-{max(spread):.2f})")
    print(f"  one sampled backward: {per_sample_ms * 1e3:.1f} µs; at the default sampling (1 in "
          f"{gradient_sentinel.SAMPLE_EVERY} calls) {default_share:.3%} of a plain step; sentinel vs wrapper "
          f"measured {result['measured_sentinel_vs_wrapper']:+.2%}")
    print(f"  one call alone, forward+backward: {plain_us:.1f} µs plain, {tapped_us:.1f} µs sampled by the sentinel "
          f"(+{tapped_us - plain_us:.1f} µs; at 1 in {gradient_sentinel.SAMPLE_EVERY} calls "
          f"{result['share_of_step_at_default_sampling_from_one_call']:.3%} of a plain step)")
    print(f"  one float64 comparison of a sampled call's gradients (at most {max_checks} a "
          f"signature): {compare_ms:.1f} ms")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


def time_one_sample(device, dtype, batch, seq, sync, reps: int = 200) -> tuple[float, float]:
    """One SDPA call at the model's attention shape, forward and backward, plain and sampled by the sentinel
    (its counts read as in a program: by the probe's poll), alternated; median µs of each over ``reps``."""
    q, k, v = (torch.randn(batch, 16, seq, 64, device=device, dtype=dtype, requires_grad=True) for _ in range(3))
    mask = torch.ones(batch, 1, seq, seq, dtype=torch.bool, device=device).tril()
    sentinel = gradient_sentinel.GradientSentinel()
    state = gradient_sentinel.SignatureGradients()
    original = getattr(F.scaled_dot_product_attention, "__wrapped__", F.scaled_dot_product_attention)
    max_checks, output_check.MAX_CHECKS = output_check.MAX_CHECKS, 0
    grad_out = torch.randn(batch, 16, seq, 64, device=device, dtype=dtype)

    def once(tapped: bool) -> float:
        sync()
        t0 = time.perf_counter()
        tap = sentinel.wrap(state, 1, q, k, v, mask, 0.0, False, None, False) if tapped else None
        if tap is None:
            out = original(q, k, v, mask)
        else:
            out = tap[3](original(tap[0], tap[1], tap[2], mask))
        out.backward(grad_out)
        sync()
        sentinel.poll([state])
        return (time.perf_counter() - t0) * 1e6

    for tapped in (False, True, False, True):
        once(tapped)
    times = {False: [], True: []}
    for _ in range(reps):
        for tapped in (False, True):
            times[tapped].append(once(tapped))
    output_check.MAX_CHECKS = max_checks
    return statistics.median(times[False]), statistics.median(times[True])


def split_one_call(args, reps: int = 50) -> int:
    """One call at the model's attention shape, plain then sampled, each ``reps`` times under the profiler."""
    from torch.profiler import ProfilerActivity, profile

    device, dtype = args.device, getattr(torch, args.dtype)
    q, k, v = (torch.randn(args.batch, 16, args.seq, 64, device=device, dtype=dtype, requires_grad=True)
               for _ in range(3))
    mask = torch.ones(args.batch, 1, args.seq, args.seq, dtype=torch.bool, device=device).tril()
    grad_out = torch.randn(args.batch, 16, args.seq, 64, device=device, dtype=dtype)
    sentinel, state = gradient_sentinel.GradientSentinel(), gradient_sentinel.SignatureGradients()
    original = getattr(F.scaled_dot_product_attention, "__wrapped__", F.scaled_dot_product_attention)
    output_check.MAX_CHECKS = 0
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    count = 2 * gradient_sentinel.SAMPLE_EVERY  # a sampled call past the first ones: no comparison, no stash

    def once(tapped: bool) -> float:
        sync()
        t0 = time.perf_counter()
        tap = sentinel.wrap(state, count, q, k, v, mask, 0.0, False, None, False) if tapped else None
        out = original(q, k, v, mask) if tap is None else tap[3](original(tap[0], tap[1], tap[2], mask))
        out.backward(grad_out)
        issued = time.perf_counter() - t0
        sync()
        sentinel.poll([state])
        return issued * 1e6

    result: dict = {"device": torch.cuda.get_device_name() if device.startswith("cuda") else "cpu",
                    "torch": torch.__version__, "shape": [args.batch, 16, args.seq, 64], "dtype": args.dtype,
                    "reps": reps}
    ops = {}
    for tapped in (False, True):
        for _ in range(5):
            once(tapped)
        with profile(activities=[ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if device != "cpu" else [])]) as p:
            host = [once(tapped) for _ in range(reps)]
        events = p.key_averages()
        gpu_us = sum(e.self_device_time_total for e in events if e.self_device_time_total) / reps
        kernels = sum(e.count for e in events if e.self_device_time_total) / reps
        name = "sampled" if tapped else "plain"
        result[name] = {"host_issue_us": statistics.median(host), "gpu_kernel_us": gpu_us,
                        "device_ops_per_call": kernels}
        ops[name] = {e.key: e.self_cpu_time_total / reps for e in events}
    extra = sorted(((key, us - ops["plain"].get(key, 0.0)) for key, us in ops["sampled"].items()),
                   key=lambda item: -item[1])[:12]
    result["added_host_us_by_op"] = dict(extra)
    for name in ("plain", "sampled"):
        r = result[name]
        print(f"  {name:8} host issue {r['host_issue_us']:8.1f} µs   GPU kernels {r['gpu_kernel_us']:8.1f} µs "
              f"({r['device_ops_per_call']:.0f} device ops)")
    print("  what the sampled call adds on the host (profiler self CPU time per call):")
    for key, us in extra:
        print(f"    {us:8.1f} µs  {key}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


def time_one_comparison(device, dtype, batch, seq, sync) -> float:
    """One sampled call's float64 comparison at the model's attention shape (16 heads of 64, a padding mask)."""
    q = torch.randn(batch, 16, seq, 64, device=device, dtype=dtype)
    k, v, grad_out = torch.randn_like(q), torch.randn_like(q), torch.randn_like(q)
    mask = torch.ones(batch, 1, seq, seq, dtype=torch.bool, device=device).tril()
    t = gradient_sentinel.CallTensors(q, k, v, mask, 0.0, False, None, False, grad_out, (q, k, v))
    gradient_reference.relative_errors(t)
    sync()
    t0 = time.perf_counter()
    gradient_reference.relative_errors(t)
    sync()
    return (time.perf_counter() - t0) * 1e3


if __name__ == "__main__":
    sys.exit(main())
