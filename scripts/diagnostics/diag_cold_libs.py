"""On a GPU, after a dropped page cache: which library pages each backend's first SDPA call reads, and how long it
takes (issue 20: the cold start's 0.5 s in the pick's first call).

    sync; echo 3 > /proc/sys/vm/drop_caches; python3 scripts/diagnostics/diag_cold_libs.py OUT.json

In one fresh process: ``import torch``, CUDA's start, then the first call of each backend in turn (cuDNN, Flash,
mem-efficient, MATH) on the live monitor's default workload ([2, 8, 512, 64] fp16). After each step it reads, with
``mincore(2)``, how many pages of every shared library under the ``nvidia`` and ``torch`` packages are in the page
cache: the growth is what that step read from disk (the kernel's own readahead around each fault included). Run
with a warm cache too, for the times without the disk.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import mmap
import os
import sys
import time
from pathlib import Path

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
PAGE = mmap.PAGESIZE


def resident_bytes(path: Path) -> int:
    """Bytes of ``path`` in the page cache (mapping it does not read it)."""
    size = path.stat().st_size
    if size == 0:
        return 0
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            return -1
        pages = (size + PAGE - 1) // PAGE
        vec = ctypes.create_string_buffer(pages)
        libc.mincore(addr, size, vec)
        libc.munmap(addr, size)
        return sum(b & 1 for b in vec.raw) * PAGE
    finally:
        os.close(fd)


def libraries() -> list[Path]:
    import importlib.util

    roots: list[Path] = []
    for name in ("nvidia", "torch"):
        spec = importlib.util.find_spec(name)
        roots += [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    return sorted(f for r in roots for f in r.rglob("*.so*") if f.is_file())


files = libraries()
steps: list[dict] = []
before = {str(f): resident_bytes(f) for f in files}


def step(name: str, took: float) -> None:
    global before
    now = {str(f): resident_bytes(f) for f in files}
    read = {k: now[k] - before[k] for k in now if now[k] - before[k] >= 1 << 20}
    steps.append({"step": name, "took_s": round(took, 4), "read_mib": {k: round(v / 2**20, 1) for k, v in read.items()},
                  "read_total_mib": round(sum(read.values()) / 2**20, 1)})
    before = now


t = time.monotonic()
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

step("import torch", time.monotonic() - t)
t = time.monotonic()
q, k, v = (torch.randn(2, 8, 512, 64, device="cuda", dtype=torch.float16) for _ in range(3))
torch.cuda.synchronize()
step("CUDA start + inputs", time.monotonic() - t)
for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                SDPBackend.MATH):
    t = time.monotonic()
    with sdpa_kernel(backend):
        F.scaled_dot_product_attention(q, k, v)
    torch.cuda.synchronize()
    step(f"first {backend.name}", time.monotonic() - t)
    t = time.monotonic()
    with sdpa_kernel(backend):
        F.scaled_dot_product_attention(q, k, v)
    torch.cuda.synchronize()
    steps[-1]["second_call_s"] = round(time.monotonic() - t, 4)

sizes = {str(f): round(f.stat().st_size / 2**20, 1) for f in files if f.stat().st_size >= 1 << 20}
for s in steps:
    print(f"{s['step']:<28} {s['took_s']:>7.3f} s  read {s['read_total_mib']:>7.1f} MiB")
    for k, mib in sorted(s["read_mib"].items(), key=lambda kv: -kv[1]):
        print(f"    {mib:>7.1f} of {sizes.get(k, 0):>7.1f} MiB  {Path(k).name}")
if len(sys.argv) > 1:
    Path(sys.argv[1]).write_text(json.dumps({"torch": torch.__version__, "steps": steps, "sizes_mib": sizes}, indent=1))
