"""Which device a ``--device`` argument means, checked in the parent before any engine starts.

A device that does not exist is bad input (the CLI prints one line and exits 2), not an
engine failure. Only ``auto`` (the default) falls back to the CPU; the engine's header note
then says why.

The parent must stay light and must not initialise CUDA (the UI process never does, and
importing torch takes seconds before the first frame), so the GPUs are counted through
NVML, as ``torch.cuda.device_count()`` itself does when it can, with ``CUDA_VISIBLE_DEVICES``
applied the way the CUDA runtime reads it. Whether torch was built with CUDA at all is read
from ``torch/version.py`` without importing torch. The engine's own
``resolve_device`` stays the last word.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEVICE_SPEC = re.compile(r"^(auto|cpu|cuda|cuda:\d+)$")
SPEC_HELP = "auto (the first GPU, else the CPU), cpu, cuda or cuda:N"


class DeviceError(ValueError):
    """The requested device does not exist here: bad input, said in one line."""


@dataclass(frozen=True)
class VisibleGpus:
    """The GPUs a CUDA process started from here would see, in CUDA's order."""

    nvml_indices: tuple[int, ...]
    """NVML index of each visible GPU: ``cuda:i`` is NVML device ``nvml_indices[i]``
    (-1 for a MIG instance named by its ``MIG-`` UUID: its parent GPU is not looked up)."""
    why_none: str = ""
    """Why there are none (empty when there are some)."""

    @property
    def count(self) -> int:
        return len(self.nvml_indices)


def check_device(spec: str, gpus: VisibleGpus | None = None) -> str:
    """The device ``spec`` resolves to (``"cpu"`` or ``"cuda:N"``), or :class:`DeviceError`.

    ``auto`` is the first visible GPU, else the CPU. ``cuda`` and ``cuda:N`` must exist:
    no GPU, or an index past the visible ones, raises. ``gpus`` defaults to
    :func:`find_gpus` (looked up only when the spec needs it).
    """
    if not DEVICE_SPEC.match(spec):
        raise DeviceError(f"--device must be {SPEC_HELP}, got {spec!r}")
    if spec == "cpu":
        return "cpu"
    gpus = gpus if gpus is not None else find_gpus()
    if spec == "auto":
        return "cuda:0" if gpus.count else "cpu"
    if not gpus.count:
        raise DeviceError(f"--device {spec}: {gpus.why_none} (use --device cpu or auto)")
    index = cuda_number(spec)
    if index >= gpus.count:
        shown = ", ".join(f"cuda:{i}" for i in range(gpus.count))
        mask = os.environ.get("CUDA_VISIBLE_DEVICES")
        where = f" with CUDA_VISIBLE_DEVICES={mask}" if mask is not None else ""
        raise DeviceError(f"--device {spec}: {gpus.count} GPU(s) visible{where} ({shown})")
    return f"cuda:{index}"


def nvml_index(device: str, gpus: VisibleGpus | None = None) -> int | None:
    """The NVML index of ``cuda:N`` (they differ under ``CUDA_VISIBLE_DEVICES``); None for
    the CPU, or where it cannot be told (a MIG instance, NVML unavailable)."""
    if not device.startswith("cuda"):
        return None
    index = cuda_number(device)
    gpus = gpus if gpus is not None else find_gpus()
    if index >= gpus.count or gpus.nvml_indices[index] < 0:
        return None
    return gpus.nvml_indices[index]


def cuda_device_of(index: int, gpus: VisibleGpus | None = None) -> str:
    """``cuda:N`` for NVML GPU ``index``, as a CUDA process started from here numbers it (they
    differ under ``CUDA_VISIBLE_DEVICES``); :class:`DeviceError` when the mask hides it."""
    gpus = gpus if gpus is not None else find_gpus()
    if index in gpus.nvml_indices:
        return f"cuda:{gpus.nvml_indices.index(index)}"
    mask = os.environ.get("CUDA_VISIBLE_DEVICES")
    if mask is not None:
        visible = ", ".join(str(i) for i in gpus.nvml_indices if i >= 0) or "none"
        raise DeviceError(f"GPU {index} is hidden by CUDA_VISIBLE_DEVICES={mask} (visible: GPU {visible})")
    raise DeviceError(f"GPU {index}: {gpus.why_none or 'not visible to CUDA'}")


def hidden_gpus(indices: Iterable[int], gpus: VisibleGpus | None = None) -> frozenset[int]:
    """The NVML GPUs of ``indices`` that ``CUDA_VISIBLE_DEVICES`` hides (none when it is unset)."""
    if "CUDA_VISIBLE_DEVICES" not in os.environ:
        return frozenset()
    visible = (gpus if gpus is not None else find_gpus()).nvml_indices
    return frozenset(i for i in indices if i not in visible)


def gpu_index(device: str, gpus: VisibleGpus | None = None) -> int | None:
    """The GPU that NVML reads for ``device``: the one measured on (None in CPU mode)."""
    if device == "cpu":
        return None
    index = nvml_index(device, gpus)  # under CUDA_VISIBLE_DEVICES, cuda:N is not NVML's device N
    if index is not None:
        return index
    return cuda_number(device)


def cuda_number(device: str) -> int:
    """N of ``cuda:N`` (0 for plain ``cuda``)."""
    return int(device.split(":", 1)[1]) if ":" in device else 0


def find_gpus(nvml: Any = None, environ: Mapping[str, str] | None = None,
              torch_cuda: str | None | bool = True) -> VisibleGpus:
    """Count the GPUs a CUDA process would see, without importing torch or touching CUDA.

    ``nvml`` (the ``pynvml`` module by default) and ``torch_cuda`` (torch's CUDA version,
    read from the installed torch when True) can be given by tests.
    """
    environ = os.environ if environ is None else environ
    cuda = torch_cuda_version() if torch_cuda is True else torch_cuda
    if not cuda:
        return VisibleGpus((), "this torch build has no CUDA")
    try:
        uuids = _nvml_uuids(nvml)
    except ImportError:  # nvidia-ml-py missing (a dependency, yet): ask torch, the slow way
        return _torch_gpus()
    except Exception as exc:  # no driver, no library, NVML failed: no usable GPU either
        return VisibleGpus((), f"no NVIDIA driver found (NVML: {_reason(exc)})")
    visible = parse_visible_devices(environ.get("CUDA_VISIBLE_DEVICES"), uuids)
    if not visible:
        why = "no CUDA GPU is visible"
        if "CUDA_VISIBLE_DEVICES" in environ:
            why += f" (CUDA_VISIBLE_DEVICES={environ['CUDA_VISIBLE_DEVICES']!s})"
        return VisibleGpus((), why)
    return VisibleGpus(tuple(visible))


def _torch_gpus() -> VisibleGpus:
    """``torch.cuda.device_count()``: it imports torch (seconds) but creates no CUDA context
    (it counts through NVML's C library, else cudaGetDeviceCount); engines are spawned, so
    they start clean either way. It applies ``CUDA_VISIBLE_DEVICES`` itself."""
    try:
        import torch

        count = torch.cuda.device_count()
    except Exception as exc:  # noqa: BLE001 - a broken torch is no GPU
        return VisibleGpus((), f"torch could not count GPUs: {_reason(exc)}")
    return VisibleGpus(tuple(range(count)), "" if count else "no CUDA GPU is visible")


def parse_visible_devices(mask: str | None, uuids: list[str]) -> list[int]:
    """NVML indices of the devices ``CUDA_VISIBLE_DEVICES=mask`` leaves visible, in order.

    As the CUDA runtime reads it: a comma list of indices or (prefixes of) ``GPU-`` UUIDs;
    the list ends at the first entry that is invalid, out of range or repeated. A ``MIG-``
    entry counts as one device (index -1). An empty mask hides every GPU; no mask shows
    them all.
    """
    if mask is None:
        return list(range(len(uuids)))
    out: list[int] = []
    for entry in (e.strip() for e in mask.split(",")):
        if entry.isdigit():
            index = int(entry)
        elif entry.startswith("MIG-"):
            out.append(-1)
            continue
        elif entry.startswith("GPU-"):
            matches = [i for i, uuid in enumerate(uuids) if uuid.startswith(entry)]
            index = matches[0] if len(matches) == 1 else -1
        else:
            break
        if not 0 <= index < len(uuids) or index in out:
            break
        out.append(index)
    return out


def torch_cuda_version() -> str | None:
    """``torch.version.cuda`` (or HIP's version) of the installed torch, without importing torch."""
    torch = sys.modules.get("torch")
    if torch is not None:
        version = getattr(torch, "version", None)
        return getattr(version, "cuda", None) or getattr(version, "hip", None)
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        tree = ast.parse(Path(spec.submodule_search_locations[0], "version.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return "unknown"  # cannot tell: let NVML and the engine decide
    found: dict[str, Any] = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if isinstance(target, ast.Name) and target.id in ("cuda", "hip") and node.value is not None:
            try:
                found[target.id] = ast.literal_eval(node.value)
            except ValueError:
                found[target.id] = "unknown"
    return found.get("cuda") or found.get("hip")


def _nvml_uuids(nvml: Any) -> list[str]:
    nvml = nvml if nvml is not None else importlib.import_module("pynvml")
    nvml.nvmlInit()
    try:
        uuids = []
        for i in range(nvml.nvmlDeviceGetCount()):
            uuid = nvml.nvmlDeviceGetUUID(nvml.nvmlDeviceGetHandleByIndex(i))
            uuids.append(uuid.decode() if isinstance(uuid, bytes) else str(uuid))
        return uuids
    finally:
        nvml.nvmlShutdown()


def _reason(exc: BaseException) -> str:
    try:
        return str(exc) or type(exc).__name__
    except Exception:  # pynvml's __str__ calls into NVML
        return type(exc).__name__
