"""FlexAttention (compiled, with the block mask equal to SDPA's mask) against SDPA's backends, per call.

Cases: causal, a key-padding mask (a quarter of the keys padded in half the batch) and no mask, in bf16.
Each time is the median of CUDA-event timings over 20 repetitions of 10 calls, forward and forward+backward, with
inputs that require grad; flex's forward again without grad (as watch's lab measures a program's no-grad calls), by
the events and by torch.profiler's kernel durations (the GPU's own work, host gaps left out). The compile time of
the first flex call is printed apart. Outputs are compared with SDPA's (max abs error).
Usage: python3 scripts/diagnostics/diag_flex.py OUT.json [--case causal|padded|none] [--static] [--padding eighth]
(``--case``: that case alone, in a process of its own; ``--static``: Dynamo's automatic dynamic shapes off, so a
later case of another shape compiles for its own sizes again.)
"""

import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--case", choices=("causal", "padded", "none"))
parser.add_argument("--static", action="store_true")
parser.add_argument("--padding", choices=("quarter-half", "eighth"), default="quarter-half",
                    help="quarter-half: a quarter of the keys padded in half the batch; eighth: the last eighth of "
                         "the keys in every sequence, as sdpa-tui's lab pads them")
args = parser.parse_args()
if args.static:
    torch._dynamo.config.automatic_dynamic_shapes = False
flex = torch.compile(flex_attention)


def timed(fn, backward: bool) -> float:
    def once():
        out = fn()
        if backward:
            out.backward(grad)
    for _ in range(3):
        once()
    times = []
    for _ in range(20):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(10):
            once()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 100.0)  # µs per call
    return statistics.median(times)


def kernels_us(fn, calls: int = 10) -> float:
    """The summed durations of the GPU work torch.profiler records over ``calls`` calls, per call."""
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return sum(e.device_time for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA) / calls


CASES = [("causal", (4, 16, 2048, 128)), ("padded keys", (8, 16, 1024, 64)), ("no mask", (4, 16, 2048, 128))]
if args.case:
    CASES = [c for c in CASES if c[0].startswith(args.case.replace("none", "no mask"))]
rows = []
for case, shape in CASES:
    B, H, S, D = shape
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    grad = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    lengths = torch.full((B,), S, device="cuda")
    if args.padding == "eighth":
        lengths[:] = S - S // 8
    else:
        lengths[: B // 2] = S * 3 // 4
    keep = torch.arange(S, device="cuda")[None, :] < lengths[:, None]  # [B, S]
    if case == "causal":
        sdpa_kw = {"is_causal": True}
        block = create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None, S, S)
    elif case == "padded keys":
        sdpa_kw = {"attn_mask": keep[:, None, None, :]}
        block = create_block_mask(lambda b, h, qi, ki: keep[b, ki], B, None, S, S)
    else:
        sdpa_kw = {}
        block = None
    t = time.monotonic()
    ref = flex(q, k, v, block_mask=block)
    torch.cuda.synchronize()
    compile_s = time.monotonic() - t
    row = {"case": case, "shape": shape, "flex_compile_s": compile_s}
    for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
        def call(backend=backend):
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v, **sdpa_kw)
        try:
            out = call()
            row[f"{backend.name}_err"] = float((out.float() - ref.float()).abs().max())
            row[f"{backend.name}_fwd_us"] = timed(call, False)
            row[f"{backend.name}_fwdbwd_us"] = timed(call, True)
        except RuntimeError as exc:
            row[f"{backend.name}_error"] = str(exc).splitlines()[0][:100]
    row["sdpa_pick_fwd_us"] = timed(lambda: F.scaled_dot_product_attention(q, k, v, **sdpa_kw), False)
    row["flex_fwd_us"] = timed(lambda: flex(q, k, v, block_mask=block), False)
    row["flex_fwdbwd_us"] = timed(lambda: flex(q, k, v, block_mask=block), True)
    qd, kd, vd = (t.detach() for t in (q, k, v))
    with torch.no_grad():
        row["flex_fwd_nograd_us"] = timed(lambda: flex(qd, kd, vd, block_mask=block), False)
        row["flex_fwd_nograd_kernels_us"] = kernels_us(lambda: flex(qd, kd, vd, block_mask=block))
    row["flex_fwd_grad_kernels_us"] = kernels_us(lambda: flex(q, k, v, block_mask=block))
    rows.append(row)
    print(json.dumps(row), flush=True)
with open(args.out, "w") as f:
    json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "case": args.case,
               "static": args.static, "rows": rows}, f, indent=1)
