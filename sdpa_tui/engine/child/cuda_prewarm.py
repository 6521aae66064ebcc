"""Work the engine's first number waits for, started before ``import torch`` and done beside it.

On the H100 (docs/lab-notes/gpu-measurements.md, 2026-11-26) the first number came 0.5-1.1 s after the engine's
``import torch`` ended: CUDA's start and the GPU's primary context (0.4 s), and on a fresh machine cuDNN's
libraries read from disk by the first SDPA call (0.55 s more than on a warm one). Both can run while torch
imports, which is Python's work on one core:

- the primary context of the engine's GPU, made on a thread through NVIDIA's driver bindings
  (``cuda-bindings``, which torch's CUDA wheels install and ``graph_nodes.py`` already uses); their driver calls
  release the GIL, so the import goes on meanwhile, and torch's runtime later finds the context made (there is
  one primary context per GPU and process);
- readahead (``posix_fadvise`` WILLNEED) of cuDNN's libraries in the ``nvidia-cudnn`` wheel, so the kernel reads
  them into the page cache before the pick's first call maps them.

Neither changes what is measured, and each is skipped where it cannot run (a CPU engine, no ``cuda-bindings``,
no driver, libraries elsewhere): torch then does the same work itself, as it did before. Measured on an H100
(docs/lab-notes/gpu-measurements.md, "The prewarm" and "The cold start"): CUDA's start after the import fell from 0.30-0.46 s
to 0.02 s; the readahead's gain is small and within the runs' spread (after a dropped cache the pick's first call took
0.18-0.21 s with it, 0.23-0.26 without, on an H100).
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from pathlib import Path

LIBRARIES = ("cudnn",)
"""The ``nvidia/<name>/lib`` folders read ahead: cuDNN's, which SDPA's pick loads on its first call on a GPU that
has it (the first number waits for it). Not cuBLAS's: a cold ``import torch`` reads much of it already (187 of
517 MiB on an H100, scripts/diagnostics/diag_cold_libs.py) and only MATH's first call, after the first number, reads more."""
READAHEAD_ENV = "SDPA_TUI_PREWARM_READAHEAD"
"""A comma list of those folders to read ahead instead, in order (empty: none), to measure what each gains."""
DRIVER_NODE = "/dev/nvidiactl"
OFF_ENV = "SDPA_TUI_NO_PREWARM"
"""``1``: no prewarm (to measure what it gains: ``benchmarks/monitor/ui_live.py`` run with and without)."""


def gpu_ordinal(device_request: str) -> int | None:
    """The CUDA ordinal an engine asked for ``device_request`` will use; None for the CPU."""
    if device_request in ("auto", "cuda"):
        return 0
    if device_request.startswith("cuda:") and device_request[5:].isdigit():
        return int(device_request[5:])
    return None


def readahead_names() -> tuple[str, ...]:
    """The library folders to read ahead: ``LIBRARIES`` unless ``READAHEAD_ENV`` names others."""
    chosen = os.environ.get(READAHEAD_ENV)
    return LIBRARIES if chosen is None else tuple(n.strip() for n in chosen.split(",") if n.strip())


def library_files(names: tuple[str, ...] = LIBRARIES) -> list[Path]:
    """The shared libraries of the ``nvidia-*`` wheels named ``names`` (in that order), found without importing."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    roots = list(spec.submodule_search_locations or []) if spec else []
    return [f for name in names
            for f in sorted(f for root in roots for f in (Path(root) / name / "lib").glob("*.so*") if f.is_file())]


def read_ahead(files: list[Path]) -> int:
    """Ask the kernel to read ``files`` into the page cache in the background; the bytes asked for."""
    asked = 0
    for path in files:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            asked += os.fstat(fd).st_size
        except OSError:
            pass
        finally:
            os.close(fd)
    return asked


def retain_primary_context(ordinal: int) -> str | None:
    """Make GPU ``ordinal``'s primary context (kept for the process's life); None when made, else why not."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return "cuda-bindings is not installed"
    ok = driver.CUresult.CUDA_SUCCESS
    try:
        (err,) = driver.cuInit(0)
    except Exception as exc:  # noqa: BLE001 - cuda-bindings raises where no driver library is found
        return f"cuInit: {type(exc).__name__}: {exc}"
    if err != ok:
        return f"cuInit: {err.name}"
    err, device = driver.cuDeviceGet(ordinal)
    if err != ok:
        return f"cuDeviceGet({ordinal}): {err.name}"
    err, _context = driver.cuDevicePrimaryCtxRetain(device)
    return None if err == ok else f"cuDevicePrimaryCtxRetain: {err.name}"


class Prewarm:
    """Started before ``import torch``; ``report()`` afterwards says what it did (a line for the engine's log)."""

    def __init__(self, device_request: str) -> None:
        self.ordinal = gpu_ordinal(device_request)
        self._thread: threading.Thread | None = None
        self._line = "prewarm: not started (a CPU engine)"

    def start(self) -> None:
        if self.ordinal is None:
            return
        if os.environ.get(OFF_ENV) == "1":
            self._line = f"prewarm: off ({OFF_ENV}=1)"
            return
        if not os.path.exists(DRIVER_NODE):  # no NVIDIA driver here: not even cuda-bindings' import is worth it
            self._line = f"prewarm: not started (no {DRIVER_NODE})"
            return
        self._thread = threading.Thread(target=self._run, name="sdpa-tui-prewarm", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        started = time.monotonic()
        try:
            why_not = retain_primary_context(self.ordinal or 0)
        except Exception as exc:  # noqa: BLE001 - a prewarm that fails leaves the work to torch, as before
            why_not = f"{type(exc).__name__}: {exc}"
        context_s = time.monotonic() - started
        if why_not is not None:  # no GPU to use here: nothing will load cuDNN either
            self._line = f"prewarm: no primary context ({why_not})"
            return
        names = readahead_names()
        asked = read_ahead(library_files(names))
        self._line = (f"prewarm: primary context of GPU {self.ordinal} made in {context_s:.2f} s; "
                      f"{asked / 2**20:.0f} MiB of libraries read ahead ({', '.join(names) or 'none'})")

    def report(self, wait_s: float = 0.0) -> str:
        if self._thread is not None:
            self._thread.join(wait_s)
            if self._thread.is_alive():
                return "prewarm: still running"
        return self._line
