"""On a GPU machine, after a dropped page cache: does reading torch's libraries ahead, beside ``import torch``,
make a cold import faster? (issue 20: the cold start is bound by the import's reads from disk.)

    sync; echo 3 > /proc/sys/vm/drop_caches; python3 scripts/diagnostics/diag_cold_import.py VARIANT

VARIANT: ``plain`` (the import alone), ``fadvise-1`` (one thread asks ``posix_fadvise`` WILLNEED for each library
the import maps, then the import), ``fadvise-8`` (eight threads), ``read-8`` (eight threads read the files through,
1 MiB at a time), ``pair`` (a second process imports torch at the same time, as the live monitor's profiler
process does beside its engine; its time is printed too). The libraries are the ones a cold import read on an H100 (scripts/diagnostics/diag_cold_libs.py, 2026-11-26),
largest first. Prints one JSON line: the variant, the import's seconds, and the bytes asked for.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

IMPORT_READS = ("libtorch_cpu.so", "libcublasLt.so", "libnvrtc.so", "libnvJitLink.so", "libtorch_cuda.so",
                "libcusparseLt.so", "libtorch_python.so", "libcurand.so", "libcusparse.so", "libcusolver.so",
                "libcufft.so", "libnccl.so", "libnvshmem_host.so", "libcublas.so", "libcupti.so", "libc10.so")


def files() -> list[Path]:
    roots = []
    for name in ("torch", "nvidia"):
        spec = importlib.util.find_spec(name)
        roots += [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    found = [f for r in roots for f in r.rglob("*.so*") if f.is_file() and any(
        f.name == s or f.name.startswith(s + ".") for s in IMPORT_READS)]
    return sorted(found, key=lambda f: -f.stat().st_size)


def fadvise(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def read_through(path: Path) -> int:
    n = 0
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(1 << 20):
            n += len(chunk)
    return n


variant = sys.argv[1]
libs = files()
asked: list[int] = []
done_at: list[float] = []
t0 = time.monotonic()


def ahead(work, threads: int) -> None:
    with ThreadPoolExecutor(threads) as pool:
        asked.extend(pool.map(work, libs))
    done_at.append(time.monotonic() - t0)


other = None
if variant == "pair":
    import subprocess

    other = subprocess.Popen([sys.executable, "-c", "import time; t = time.monotonic(); import torch; "
                              "print(round(time.monotonic() - t, 3))"], stdout=subprocess.PIPE, text=True)
elif variant != "plain":
    work = read_through if variant.startswith("read") else fadvise
    threading.Thread(target=ahead, args=(work, int(variant.split("-")[1])), daemon=True).start()
import torch  # noqa: E402,F401

took = time.monotonic() - t0
time.sleep(0.2)
other_s = float(other.communicate()[0]) if other else None
print(json.dumps({"variant": variant, "import_s": round(took, 3), "other_import_s": other_s, "files": len(libs),
                  "asked_mib": round(sum(asked) / 2**20), "readahead_done_s": done_at[0] if done_at else None}))
