"""A transformers Llama from a config (random weights, no download) on a right-padded batch, forward and backward, as
``watch`` sees it; and with ``--code-from REPORT``, the same steps with watch's advised code for the padded calls
applied by hand (packed attention in place of SDPA), to hold the saving realised against the one promised.

    python hf_padded_packed.py [device] [dtype] [seq] [padding] [--steps N]             # SDPA, padded (watch this)
    python hf_padded_packed.py cuda bfloat16 1024 0.25 --code-from watch.json [--json realised.json] [--trace DIR]

The batch: 8 sequences of ``seq`` tokens with ``padding`` of the keys padding (the first as long as ``seq``, the
others spread around the mean that leaves; as ``report --padding``). With ``--code-from``, the program replaces
``torch.nn.functional.scaled_dot_product_attention`` by a function that runs the advised code (the report's best
``code`` of the padded call, its text executed as it is, with ``q, k, v, attn_mask`` in scope) for calls with a
4-d mask, and SDPA for the others; as the code's header lines say, its once-per-batch part runs once per mask (the
model builds one per forward and gives it to every layer) and its every-call part in every call; it times ``STEPS`` forward+backward steps of each way (CUDA-synchronised, the
median step), compares the logits of the real tokens, and prints one JSON line: the step times, the attention
calls per step, the saving promised (the advice's per call × the calls per step) and realised, and the logits'
largest difference over their largest magnitude on the real tokens.
"""

import argparse
import json
import statistics
import time
import types

import torch
import torch.nn.functional as F
from transformers import LlamaConfig, LlamaForCausalLM

STEPS = 10
WARMUP = 3
BATCH = 8

parser = argparse.ArgumentParser()
parser.add_argument("device", nargs="?", default="cpu")
parser.add_argument("dtype", nargs="?", default="float32")
parser.add_argument("seq", nargs="?", type=int, default=64)
parser.add_argument("padding", nargs="?", type=float, default=0.25)
parser.add_argument("--code-from", metavar="REPORT", help="watch --report's JSON whose advised code to apply")
parser.add_argument("--json", metavar="PATH", help="also write the result here")
parser.add_argument("--hidden", type=int, default=1024, help="the model's hidden size on a GPU (16 heads; the MLP "
                    "twice as wide): more GPU work per layer for the same host work")
parser.add_argument("--steps", type=int, default=4, help="without --code-from: the training steps, each waited for "
                    "on the GPU as the timed ones are (a training loop that logs its loss does so)")
parser.add_argument("--trace", metavar="DIR", help="also write a torch.profiler trace of one step of each way there")
args = parser.parse_args()
device, dtype, seq = args.device, getattr(torch, args.dtype), args.seq


def lengths_for_padding(batch: int, padded: int, padding: float) -> list[int]:
    """As ``sdpa_tui.core.padded_lengths.lengths_for_padding`` (copied: this program does not import sdpa-tui)."""
    real = round((1.0 - padding) * batch * padded)
    rest, others = real - padded, batch - 1
    if rest < others:
        return [max(1, real // batch)] * batch
    mean = rest / others
    half = 0.5 * min(mean - 1, padded - mean)
    lengths = [round(mean + half * (1 - 2 * i / (others - 1))) for i in range(others)]
    lengths[-1] += rest - sum(lengths)
    return [padded, *(min(padded, max(1, n)) for n in lengths)]


torch.manual_seed(0)
big = device != "cpu"
model = LlamaForCausalLM(LlamaConfig(
    vocab_size=1024 if big else 128, hidden_size=args.hidden if big else 64,
    intermediate_size=2 * args.hidden if big else 128,
    num_hidden_layers=8 if big else 2, num_attention_heads=16 if big else 4, num_key_value_heads=4 if big else 2,
    max_position_embeddings=max(4096, seq), attn_implementation="sdpa",
)).to(device, dtype)
lengths = lengths_for_padding(BATCH, seq, args.padding)
ids = torch.randint(0, model.config.vocab_size, (BATCH, seq), device=device)
keep = (torch.arange(seq, device=device)[None, :] < torch.tensor(lengths, device=device)[:, None]).long()
labels = ids.masked_fill(keep == 0, -100)
calls = {"n": 0}
sdpa = F.scaled_dot_product_attention


spans: dict[str, list[float]] = {"forward": [], "backward": []}


def step() -> torch.Tensor:
    """One training step; the host's time in its forward and in its backward (until each returns: launches, and
    any wait for the GPU inside) into ``spans``."""
    model.zero_grad(set_to_none=True)
    t0 = time.perf_counter()
    out = model(ids, attention_mask=keep, labels=labels)
    t1 = time.perf_counter()
    out.loss.backward()
    spans["forward"].append(t1 - t0)
    spans["backward"].append(time.perf_counter() - t1)
    return out.logits.detach()


def host_spans() -> dict[str, float]:
    """The median host µs of the last ``STEPS`` steps' forward and backward."""
    return {name: statistics.median(v[-STEPS:]) * 1e6 for name, v in spans.items()}


def timed_steps(steps: int = STEPS) -> tuple[float, torch.Tensor]:
    for _ in range(WARMUP):
        logits = step()
    times = []
    for _ in range(steps):
        if device != "cpu":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        logits = step()
        if device != "cpu":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6, logits


def traced(name: str) -> None:
    """One more step of the current way, traced (CPU and CUDA) into ``--trace``/``name``.json."""
    if not args.trace:
        return
    import os
    os.makedirs(args.trace, exist_ok=True)
    if device != "cpu":
        torch.cuda.synchronize()
    with torch.profiler.profile() as prof:
        step()
        if device != "cpu":
            torch.cuda.synchronize()
    prof.export_chrome_trace(os.path.join(args.trace, f"{name}.json"))


def advised(report_path: str) -> tuple[str, float, str]:
    """The padded call's advised code, its promised saving per call (µs) and the clock it was measured on."""
    with open(report_path) as f:
        report = json.load(f)
    padded = [c for c in report["calls"] if c["mask"]["form"] in ("key_padding", "causal_key_padding") and c["best"]
              and c["grad"]]  # the training steps' calls: the steps timed here
    if not padded:
        raise SystemExit(f"{report_path}: no padded training call has advice (nothing faster beyond noise, or not "
                         "measured)")
    call = max(padded, key=lambda c: c["count"])
    return call["best"]["code"], call["saving_us_per_call"], call["advice"]["clock"]


if not args.code_from:
    median_us, _ = timed_steps(args.steps)
    with torch.no_grad():
        print("lengths", lengths, "loss", float(model(ids, attention_mask=keep, labels=labels).loss),
              f"median step {median_us / 1e3:.2f} ms")
    raise SystemExit(0)

code, promised_per_call, clock = advised(args.code_from)
# the code's own F: torch.nn.functional as it was, whose SDPA is not this replacement
unpatched_F = types.SimpleNamespace(**{name: getattr(F, name) for name in dir(F) if not name.startswith("__")})


def code_parts(text: str) -> tuple[str, str]:
    """The code's imports with its once-per-batch part, and its every-call part (split at the header lines, as
    ``sdpa_tui.core.calls.packed_alternative.code_parts``); a code without them runs whole in every call."""
    lines = text.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith(("# once per batch", "# every call"))]
    if len(heads) != 2:
        return "", text
    return "\n".join(lines[:heads[1]]), "\n".join(lines[heads[1] + 1:])


batch_text, call_text = code_parts(code)
per_batch, per_call = compile(batch_text, "<advised code>", "exec"), compile(call_text, "<advised code>", "exec")
last = {"mask": None, "scope": {}, "batches": 0}


def packed_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """The advised code for a padded call (a 4-d mask), SDPA for any other."""
    calls["n"] += 1
    if attn_mask is None or attn_mask.dim() != 4 or dropout_p:
        return sdpa(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                    enable_gqa=enable_gqa)
    names = {"torch": torch, "F": unpatched_F, "q": query, "k": key, "v": value, "attn_mask": attn_mask}
    mask = attn_mask if attn_mask._base is None else attn_mask._base  # transformers passes each layer a view
    if last["mask"] is not mask:  # a new batch's mask: its once-per-batch part, kept for the other layers
        last["mask"], last["scope"] = mask, dict(names)
        last["batches"] += 1
        exec(per_batch, last["scope"])  # the advised text as it is
    scope = {**last["scope"], **names}
    exec(per_call, scope)
    return scope["out"]


sdpa_us, sdpa_logits = timed_steps()
sdpa_spans = host_spans()
traced("sdpa")
calls["n"] = 0
step()
F.scaled_dot_product_attention = packed_sdpa
calls["n"] = 0
step()
per_step = calls["n"]
last["batches"] = 0
packed_us, packed_logits = timed_steps()
packed_spans = host_spans()
traced("packed")
F.scaled_dot_product_attention = sdpa
real = keep.bool()
diff = (packed_logits[real].float() - sdpa_logits[real].float()).abs().max().item()
scale_ = sdpa_logits[real].float().abs().max().item()
result = {
    "device": torch.cuda.get_device_name() if device != "cpu" else "cpu", "torch": torch.__version__,
    "dtype": args.dtype, "seq": seq, "padding": args.padding, "lengths": lengths,
    "attention_calls_per_step": per_step, "once_per_batch_runs": last["batches"], "steps": WARMUP + STEPS,
    "step_us_sdpa": sdpa_us, "step_us_packed": packed_us,
    "promised_us_per_call": promised_per_call, "promised_clock": clock,
    "promised_us_per_step": promised_per_call * per_step, "realised_us_per_step": sdpa_us - packed_us,
    "realised_over_promised": (sdpa_us - packed_us) / (promised_per_call * per_step) if promised_per_call else None,
    "logits_max_rel_diff_real_tokens": diff / scale_ if scale_ else None,
    "host_forward_us_sdpa": sdpa_spans["forward"], "host_backward_us_sdpa": sdpa_spans["backward"],
    "host_forward_us_packed": packed_spans["forward"], "host_backward_us_packed": packed_spans["backward"],
}
print(json.dumps(result))
if args.json:
    with open(args.json, "w") as f:
        json.dump(result, f, indent=2)
