"""What pytorch#177712's pattern costs: SDPA given a mask under torch.compile where eager code passes none.

The call of ``tests/watch_programs/compiled_mask.py`` on a GPU (a transformers BERT, q/k/v [8, 16, 512, 64] bf16,
dropout 0.1, training): eager transformers passes ``attn_mask=None``; under Dynamo the graph gets an all-keys
bool mask [8, 1, 512, 512] whose last dimension has stride 0 (an expanded tensor), which no fused backend takes.
Two clocks per call, forward and forward+backward: ``kernels``, the GPU's own work (the summed durations of the
kernels torch.profiler records over 5 calls, per call: the clock of watch's kernel time), and ``span``, CUDA events
around 10 back-to-back calls (median of 20), which also holds the GPU's idle time while the host launches (a
compiled function's guards and wrapper show there, not in the kernels). Cases:

- eager, no mask (what the eager program runs);
- compiled, the expanded mask (MATH, decomposed by Inductor) in two layouts: [8, 1, 512, 1] expanded (strides
  [512, 512, 1, 0]), and [1, 1, 512, 1] expanded (strides [0, 512, 1, 0]), the layout the graph's mask had on the
  H100 (watch's JSON, ``mask.strides``); each compiled case after ``torch._dynamo.reset()``, so no case inherits
  another's graphs or dynamic shapes;
- compiled, no mask; eager, the same mask made contiguous (two ways out).

Then the whole BERT training step, eager and compiled (events, median of 20 steps).
Usage: python3 benchmarks/watch_truth/compiled_mask_cost.py [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch
import torch.nn.functional as F

B, H, S, D = 8, 16, 512, 64


def per_call_us(fn, backward: bool, grad: torch.Tensor) -> float:
    def once():
        out = fn()
        if backward:
            out.backward(grad)
    for _ in range(3):
        once()
    times = []
    for _ in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(10):
            once()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 100.0)
    return statistics.median(times)


def kernel_us(fn, backward: bool, grad: torch.Tensor, calls: int = 5) -> tuple[float, dict[str, float]]:
    """The GPU's own work per call: the summed durations of the kernels (memsets and copies too) that torch.profiler
    records over ``calls`` calls, divided by ``calls``; and each kernel name's share of it (µs a call), in order of
    first launch."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            out = fn()
            if backward:
                out.backward(grad)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    per_name: dict[str, float] = {}
    for e in kernels:
        per_name[e.name] = per_name.get(e.name, 0.0) + e.device_time / calls
    return sum(e.device_time for e in kernels) / calls, per_name


def attention_rows() -> list[dict]:
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    grad = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16)
    expanded = torch.ones(B, 1, S, 1, dtype=torch.bool, device="cuda").expand(B, 1, S, S)
    batch_expanded = torch.ones(1, 1, S, 1, dtype=torch.bool, device="cuda").expand(B, 1, S, S)

    def attend(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.1, scale=0.125)

    def compiled(mask):
        torch._dynamo.reset()
        fn = torch.compile(attend)
        return lambda: fn(q, k, v, mask)

    cases = {
        "eager, no mask": lambda: (lambda: attend(q, k, v, None)),
        "compiled, expanded mask (stride 0)": lambda: compiled(expanded),
        "compiled, graph's layout [0,512,1,0]": lambda: compiled(batch_expanded),
        "compiled, no mask": lambda: compiled(None),
        "eager, mask made contiguous": lambda: (lambda: attend(q, k, v, expanded.contiguous())),
    }
    rows = []
    for name, make in cases.items():
        fn = make()
        for _ in range(3):  # compiled: the first backward compiles (and may launch work) outside the windows
            fn().backward(grad)
        fwd, fwd_kernels = kernel_us(fn, False, grad)
        both, both_kernels = kernel_us(fn, True, grad)
        rows.append({"case": name, "kernel_fwd_us": fwd, "kernel_fwd_bwd_us": both, "kernels": list(fwd_kernels),
                     "kernels_fwd_us": fwd_kernels, "kernels_fwd_bwd_us": both_kernels,
                     "span_fwd_us": per_call_us(fn, False, grad), "span_fwd_bwd_us": per_call_us(fn, True, grad)})
    return rows


def step_rows() -> list[dict]:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=128, hidden_size=1024, num_hidden_layers=2, num_attention_heads=16,
                                 intermediate_size=4096, max_position_embeddings=512,
                                 attn_implementation="sdpa")).to("cuda", torch.bfloat16)
    ids = torch.randint(0, 128, (B, S), device="cuda")

    def step(m):
        def run():
            m(ids).last_hidden_state.float().sum().backward()
        return run

    rows = []
    for name, m in (("BERT step, eager", model), ("BERT step, compiled", torch.compile(model))):
        run = step(m)
        for _ in range(3):
            run()
        times = []
        for _ in range(20):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000.0)
        rows.append({"case": name, "step_us": statistics.median(times)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    rows = attention_rows()
    print(f"{'case':<38} {'kernels fwd':>11} {'fwd+bwd':>9} {'span fwd':>9} {'fwd+bwd':>9}  (µs a call)")
    for r in rows:
        print(f"{r['case']:<38} {r['kernel_fwd_us']:>11.1f} {r['kernel_fwd_bwd_us']:>9.1f} "
              f"{r['span_fwd_us']:>9.1f} {r['span_fwd_bwd_us']:>9.1f}")
    steps = step_rows()
    for r in steps:
        print(f"{r['case']:<38} {r['step_us']:>9.1f} µs a step (fwd+bwd)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "shape": [B, H, S, D], "attention": rows, "steps": steps}, f, indent=1)


if __name__ == "__main__":
    main()
