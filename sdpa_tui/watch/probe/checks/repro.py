"""A flagged call as a folder to file: its tensors, a script that replays it on every backend, the environment.

``call.pt`` holds q, k, v, the mask and the upstream gradient as the program passed them (on the host; their
strides in ``strides``), with the call's arguments; ``repro.py`` (standalone: torch only) replays the call
forward and backward under each backend and prints what is non-finite; ``README.md`` says what watch saw and the
environment, ready to paste into an issue. ``sdpa-tui report --inputs FOLDER`` measures and checks the same call.
"""

from __future__ import annotations

import json
import os
import platform
import re
from pathlib import Path

import torch

CALL_FILE = "call.pt"
SCRIPT_FILE = "repro.py"
FORMAT = "sdpa-tui-call/1"

SCRIPT = '''\
"""Replays one scaled_dot_product_attention call saved by sdpa-tui watch, forward and backward, on each
backend, and prints which of out, dq, dk, dv hold NaN or Inf. Run with the torch that showed it: python repro.py"""
import pathlib, torch
from torch.nn.attention import SDPBackend, sdpa_kernel

call = torch.load(pathlib.Path(__file__).with_name("call.pt"))
device = call["device"] if torch.cuda.is_available() or call["device"] == "cpu" else "cpu"
def load(name):  # on the device, with the strides the program's tensor had
    t = call[name]
    return None if t is None else torch.empty_strided(t.shape, call["strides"][name], dtype=t.dtype, device=device).copy_(t)
print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.get_device_name() if device != "cpu" else "cpu")
for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH):
    q, k, v = (load(n).requires_grad_() for n in "qkv")
    try:
        with sdpa_kernel([backend]):
            out = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=load("attn_mask"), dropout_p=call["dropout_p"], is_causal=call["is_causal"],
                scale=call["scale"], enable_gqa=call["enable_gqa"])
            out.backward(load("grad_out"))
    except RuntimeError as exc:
        print(f"{backend.name:20}  not run: {str(exc).strip().splitlines()[0][:100]}")
        continue
    bad = [f"{n} {int((~t.isfinite()).sum()):,} of {t.numel():,}" for n, t in (("out", out), ("dq", q.grad), ("dk", k.grad), ("dv", v.grad)) if not bool(t.isfinite().all())]
    print(f"{backend.name:20}  " + ("non-finite: " + ", ".join(bad) if bad else "all finite"))
'''


def _host(t: torch.Tensor | None) -> torch.Tensor | None:
    return None if t is None else t.detach().to("cpu", copy=True)


def environment() -> dict[str, str]:
    """What decides SDPA's kernels on this machine, as a bug report asks for it."""
    env = {"torch": torch.__version__, "python": platform.python_version(), "platform": platform.platform(),
           "cuda": str(torch.version.cuda), "cudnn": str(torch.backends.cudnn.version())}
    if torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name()
        env["capability"] = "sm%d%d" % torch.cuda.get_device_capability()
        try:
            import pynvml

            pynvml.nvmlInit()
            env["driver"] = str(pynvml.nvmlSystemGetDriverVersion())
        except Exception:  # noqa: BLE001 - the driver's version is a nicety
            pass
    cuda = torch.backends.cuda
    env["flags"] = ", ".join(f"{name}={getattr(cuda, f'{name}_sdp_enabled')()}"
                             for name in ("cudnn", "flash", "mem_efficient", "math"))
    env.update({k: v for k, v in os.environ.items() if k.startswith("TORCH_CUDNN_SDPA") or k == "CUDNN_FRONTEND_LOG_INFO"})
    return env


def folder_name(index: int, backend: str | None, q: torch.Tensor) -> str:
    shape = "x".join(str(n) for n in q.shape)
    dtype = str(q.dtype).removeprefix("torch.")
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{os.getpid()}-call{index}-{backend or 'unknown'}-{shape}-{dtype}")


def write(root: str, name: str, tensors, backend: str | None, site: str, found: str) -> str:
    """The folder for one flagged call under ``root``; its path ("" when it could not be written: said in the
    check's note by the caller)."""
    folder = Path(root) / name
    folder.mkdir(parents=True, exist_ok=True)
    named = {"q": tensors.q, "k": tensors.k, "v": tensors.v, "attn_mask": tensors.mask, "grad_out": tensors.grad_out}
    call = {"format": FORMAT, "device": "cuda" if tensors.q.is_cuda else "cpu", "dropout_p": tensors.dropout_p,
            "is_causal": tensors.causal, "scale": tensors.scale, "enable_gqa": tensors.gqa, "backend": backend,
            "strides": {n: None if t is None else list(t.stride()) for n, t in named.items()}}
    call.update({n: _host(t) for n, t in named.items()})
    torch.save(call, folder / CALL_FILE)
    (folder / SCRIPT_FILE).write_text(SCRIPT)
    env = environment()
    shapes = {n: None if t is None else [list(t.shape), str(t.dtype)] for n, t in named.items()}
    (folder / "call.json").write_text(json.dumps({"format": FORMAT, "backend": backend, "site": site, "found": found,
                                                  "shapes": shapes, "environment": env}, indent=2) + "\n")
    args = (f"is_causal={tensors.causal}, dropout_p={tensors.dropout_p}, scale={tensors.scale}, "
            f"enable_gqa={tensors.gqa}")
    lines = [
        f"# scaled_dot_product_attention on {backend}: {found}", "",
        f"Seen by `sdpa-tui watch` at `{site}`. The call's own tensors are in `{CALL_FILE}`; `python {SCRIPT_FILE}`",
        "replays the call forward and backward on each backend and prints which results hold NaN or Inf.", "",
        "Call: " + ", ".join(f"{n} {s[0]} {s[1]}" for n, s in shapes.items() if s) + f"; {args}", "",
        "Environment:", "", *(f"- {k}: {v}" for k, v in env.items()), "",
    ]
    (folder / "README.md").write_text("\n".join(lines))
    return str(folder)
