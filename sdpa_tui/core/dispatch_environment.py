"""The environment that decides SDPA's dispatch, beyond the versions: which cuDNN library is loaded (and whether
it shadows the wheel's), the Flash implementation, the process-wide flags found at start, and the variables.

Read in a process with torch (the engine: ``engine/measuring/dispatch_readings.py``; a watched program: the probe);
this module holds the records and what reads without torch (the process's mapped libraries, the variables).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

CUDNN_SONAME = "libcudnn.so"
"""The main cuDNN library (``libcudnn.so.9``); its ``libcudnn_*`` sub-libraries are loaded from beside it."""
ENV_PREFIXES = ("TORCH_CUDNN_", "CUDNN_", "TORCH_SDPA", "TORCH_FLASH", "CUBLAS_WORKSPACE_CONFIG", "LD_LIBRARY_PATH",
                "LD_PRELOAD")
"""Variables that change SDPA's dispatch or kernels: torch's cuDNN switches (``TORCH_CUDNN_SDPA_*``), cuDNN's own,
the deterministic settings, and where the dynamic loader looks for libraries (a cuDNN there can shadow the
wheel's)."""
FLAG_NAMES = ("flash", "mem_efficient", "math", "cudnn", "deterministic", "deterministic_warn_only",
              "cudnn_deterministic", "cudnn_enabled")


@dataclass(frozen=True)
class CudnnLoaded:
    """The cuDNN library this process has mapped, against the one torch was built with and the wheel's copy."""

    path: str
    version: str | None  # the loaded library's, "9.19.0"
    built_with: str | None  # torch's compile-time cuDNN
    wheel_path: str | None  # the nvidia-cudnn wheel's copy, when one is installed
    shadowed: bool  # another copy was loaded in place of the wheel's
    also_mapped: tuple[str, ...] = ()  # other copies mapped in the process, not the one whose symbols torch uses

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "CudnnLoaded | None":
        if not d:
            return None
        return cls(str(d["path"]), d.get("version"), d.get("built_with"), d.get("wheel_path"), bool(d.get("shadowed")),
                   tuple(d.get("also_mapped", ())))


@dataclass(frozen=True)
class FlashImpl:
    """The Flash implementation SDPA's Flash backend runs: None is torch's own (FA2, built in)."""

    current: str | None
    registered: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "FlashImpl | None":
        if not d:
            return None
        return cls(d.get("current"), tuple(d.get("registered", ())))


@dataclass(frozen=True)
class DispatchEnvironment:
    """All of it, as one process read it (JSON: ``environment.cudnn_loaded``, ``flash_impl``, ``sdp_flags``,
    ``sdpa_env``)."""

    cudnn_loaded: CudnnLoaded | None = None
    flash_impl: FlashImpl | None = None
    sdp_flags: dict[str, bool] = field(default_factory=dict, hash=False)  # compared, not hashed
    sdpa_env: dict[str, str] = field(default_factory=dict, hash=False)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "DispatchEnvironment":
        d = d or {}
        return cls(CudnnLoaded.from_dict(d.get("cudnn_loaded")), FlashImpl.from_dict(d.get("flash_impl")),
                   {str(k): bool(v) for k, v in (d.get("sdp_flags") or {}).items()},
                   {str(k): str(v) for k, v in (d.get("sdpa_env") or {}).items()})

    def notes(self) -> list[str]:
        return summary(self.cudnn_loaded, self.flash_impl, self.sdp_flags, self.sdpa_env)


def mapped_libraries(maps: str, soname: str = CUDNN_SONAME) -> list[str]:
    """The paths of the files mapped as ``soname`` (``libcudnn.so.9``, not ``libcudnn_graph.so.9``) in the text of
    ``/proc/<pid>/maps``, each once, in the order of their addresses."""
    found: list[str] = []
    for line in maps.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6:
            path = parts[5].strip()
            if os.path.basename(path).startswith(soname) and path not in found:
                found.append(path)
    return found


def own_mapped_libraries(soname: str = CUDNN_SONAME) -> list[str]:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            return mapped_libraries(f.read(), soname)
    except OSError:  # not Linux
        return []


def wheel_copy(package_dirs: list[str], loaded: str) -> str | None:
    """The wheel's copy of the loaded library (same file name, in ``<package>/lib``), if one is installed."""
    name = os.path.basename(loaded)
    for directory in package_dirs:
        candidate = os.path.join(directory, "lib", name)
        if os.path.exists(candidate):
            return candidate
    return None


def is_shadowed(loaded: str, wheel: str | None) -> bool:
    """Was another copy loaded in place of the wheel's (``LD_LIBRARY_PATH``, ``LD_PRELOAD``, a system library)?"""
    return wheel is not None and os.path.realpath(loaded) != os.path.realpath(wheel)


def sdpa_variables(environ: dict[str, str] | os._Environ) -> dict[str, str]:
    return {k: environ[k] for k in sorted(environ) if k.startswith(ENV_PREFIXES)}


def version_text(version: int | tuple[int, ...] | None) -> str | None:
    """cuDNN's version as text: ``91900`` (cudnnGetVersion, 9.x) or ``(9, 19, 0)`` (torch's compile-time triple)."""
    if version is None:
        return None
    if isinstance(version, tuple):
        return ".".join(str(v) for v in version)
    return f"{version // 10000}.{version % 10000 // 100}.{version % 100}"


def summary(cudnn: CudnnLoaded | None, flash: FlashImpl | None, flags: dict[str, bool],
            variables: dict[str, str]) -> list[str]:
    """What differs from a plain install, one short phrase each (empty: nothing to say)."""
    out = []
    if cudnn is not None:
        if cudnn.shadowed:
            out.append(f"cuDNN {cudnn.version} in use from {cudnn.path}, not the wheel's")
        elif cudnn.also_mapped:
            out.append(f"another cuDNN mapped too: {', '.join(cudnn.also_mapped)}")
        if cudnn.built_with and cudnn.version and cudnn.built_with != cudnn.version:
            out.append(f"cuDNN {cudnn.version} loaded, torch built with {cudnn.built_with}")
    if flash is not None and flash.current:
        out.append(f"Flash implementation {flash.current}")
    off = [name for name in ("flash", "mem_efficient", "math", "cudnn") if flags.get(name) is False]
    if off:
        out.append(f"SDPA flags off: {', '.join(off)}")
    if flags.get("deterministic"):
        out.append("deterministic algorithms" + (" (warn only)" if flags.get("deterministic_warn_only") else ""))
    if flags.get("cudnn_enabled") is False:
        out.append("torch.backends.cudnn.enabled is False")
    shown = [k for k in variables if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")]
    if shown:
        out.append("set: " + ", ".join(f"{k}={variables[k]}" for k in shown))
    return out
