"""Does a training step stay slower after a profiler window, once CUPTI is detached? An in-process A/B.

Across processes the H100 host's step time moves by ±10 % (docs/lab-notes/watch-truth.md), more than the 2 % to be shown.
Here each process times N steps of a transformers Llama (truth.py's config), then either does nothing for a
second (``control``), or runs one torch.profiler window of 16 steps and stops it with ``TEARDOWN_CUPTI=1``
as watch does between windows (``detach``), or without it (``attached``, Kineto's default), and times N steps
again. The ratio after/before in ``control`` is the process's own drift; ``detach`` against it is what stays
after a detached window. Fresh processes, modes alternated over rounds. Prints a table, writes JSON.

    python3 benchmarks/watch_cost/cupti_after_detach.py --steps 1500 --rounds 2      # on a GPU
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: recorded.py
from recorded import run_header, write_result  # noqa: E402

MODES = ("control", "detach", "attached")


def child(mode: str, steps: int) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=1024, hidden_size=1024, intermediate_size=2048, num_hidden_layers=2,
                         num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=1024,
                         attn_implementation="sdpa")
    model = LlamaForCausalLM(config).to("cuda", torch.bfloat16)
    ids = torch.randint(0, 1024, (2, 512), device="cuda")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    def run(n: int) -> list[float]:
        times = []
        for _ in range(n):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            model(ids, labels=ids).loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
        return times

    run(50)
    before = run(steps)
    if mode == "control":
        time.sleep(1.0)
    else:
        from torch.profiler import ProfilerActivity, profile

        if mode == "detach":
            os.environ["TEARDOWN_CUPTI"] = "1"
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True):
            run(16)
        for _ in range(10):  # CUDA runtime calls in which Kineto's waiting teardown finalizes CUPTI
            torch.cuda.current_device()
            time.sleep(0.05)
    after = run(steps)
    print(json.dumps({"mode": mode, "before_ms": statistics.median(before), "after_ms": statistics.median(after),
                      "before_mean_ms": statistics.mean(before), "after_mean_ms": statistics.mean(after)}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", default=None)
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.steps)
        return 0
    started = dt.datetime.now(dt.timezone.utc)
    runs = []
    for r in range(args.rounds):
        for mode in MODES if r % 2 == 0 else MODES[::-1]:
            proc = subprocess.run([sys.executable, __file__, "--child", mode, "--steps", str(args.steps)],
                                  capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                sys.exit(f"{mode} failed:\n{proc.stderr[-2000:]}")
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            x = runs[-1]
            print(f"round {r}: {mode:9} before {x['before_ms']:.3f} ms  after {x['after_ms']:.3f} ms  "
                  f"after/before {x['after_ms'] / x['before_ms']:.4f}", flush=True)
    print(f"{'mode':10} {'after/before (median of rounds)':>32} {'against control':>16}")
    ratio = {m: statistics.median(x["after_ms"] / x["before_ms"] for x in runs if x["mode"] == m) for m in MODES}
    for m in MODES:
        print(f"{m:10} {ratio[m]:>32.4f} {(ratio[m] / ratio['control'] - 1) * 100:>+15.2f}%")
    write_result({**run_header(started, argv, "cuda"), "steps": args.steps, "runs": runs, "ratio": ratio},
                 args.json, "cupti-after-detach.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
