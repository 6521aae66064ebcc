"""Which of SDPA's first calls compiles PTX at run time, filling CUDA's JIT cache (issue 39: a machine's very first
``sdpa-tui`` run reaches its first GPU/call number 0.3-0.4 s later than every later run, and only an emptied JIT
cache, ``CUDA_CACHE_PATH``, brings that back).

Each step runs in a fresh process of its own, after the CUDA context and the inputs are made, with an empty JIT cache
of its own: once as a user's program runs (the step's first call timed, the cache's size after it), once with
``CUDA_DISABLE_PTX_JIT=1`` (a step whose kernels exist only as PTX for this GPU then fails, and says which kernel).
Steps: each backend's forward and forward+backward at the default workload ([2, 8, 512, 64] fp16) and the inputs'
own kernels.

    python3 scripts/diagnostics/diag_jit_cache.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

STEPS = ["inputs", "flash", "efficient", "cudnn", "math", "flash-bwd", "efficient-bwd", "cudnn-bwd", "math-bwd"]

CHILD = r"""
import json, os, sys, time
from pathlib import Path
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

step = sys.argv[1]
torch.empty(1, device="cuda"); torch.cuda.synchronize()  # the context, outside the step's time
backends = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}

def make():
    return [torch.randn(2, 8, 512, 64, device="cuda", dtype=torch.float16, requires_grad=step.endswith("bwd"))
            for _ in range(3)]

def call():
    q, k, v = make()
    if step != "inputs":
        with sdpa_kernel([backends[step.removesuffix("-bwd")]]):
            o = F.scaled_dot_product_attention(q, k, v)
            if step.endswith("bwd"):
                o.sum().backward()

def size():
    return sum(p.stat().st_size for p in Path(os.environ["CUDA_CACHE_PATH"]).rglob("*") if p.is_file())

out = {"step": step, "cache_before": size()}
start = time.perf_counter()
try:
    call()
    torch.cuda.synchronize()
    out["ok"] = True
except Exception as exc:  # the JIT switched off: the kernel that needed it
    out["ok"], out["error"] = False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
out["first_call_s"] = time.perf_counter() - start
start = time.perf_counter()
try:
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    out["next_call_s"] = (time.perf_counter() - start) / 3
except Exception:
    out["next_call_s"] = None
out["cache_after"] = size()
print(json.dumps(out))
"""


def run(step: str, no_jit: bool) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "CUDA_CACHE_PATH": cache}
        env.pop("CUDA_DISABLE_PTX_JIT", None)
        if no_jit:
            env["CUDA_DISABLE_PTX_JIT"] = "1"
        proc = subprocess.run([sys.executable, "-c", CHILD, step], capture_output=True, text=True, env=env, timeout=300)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if not lines:
            return {"step": step, "ok": False, "error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
        return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import torch

    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"cuDNN {torch.backends.cudnn.version()}, arch list {torch.cuda.get_arch_list()}")
    rows = []
    print(f"{'step':<14} {'first call s':>12} {'next call s':>11} {'JIT cache after':>15}  with CUDA_DISABLE_PTX_JIT=1")
    for step in STEPS:
        jit, no_jit = run(step, False), run(step, True)
        rows.append({"step": step, "jit": jit, "no_jit": no_jit})
        nxt = jit.get("next_call_s")
        print(f"{step:<14} {jit.get('first_call_s', float('nan')):>12.3f} "
              f"{nxt if nxt is not None else float('nan'):>11.4f} {jit.get('cache_after', 0) / 1024:>12.0f} KiB  "
              f"{'runs' if no_jit.get('ok') else no_jit.get('error', 'failed')}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
