"""A small NVML wrapper that never raises into callers: importing pynvml and reading one GPU.

Every NVML call goes through one helper (nvitop's ``nvmlQuery`` idea): an error becomes
``None`` for that field and its text goes into ``GpuSnapshot.errors``. NVML calls cost
1-2.6 ms each, so poll from :class:`~.gpu_poller.GpuPoller`'s thread, never from the UI thread.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

from .gpu_snapshot import NVML_FIELDS, GpuProcess, GpuSnapshot, decode_clock_event_reasons

log = logging.getLogger(__name__)

NOT_INSTALLED = "nvidia-ml-py not installed"


def import_pynvml() -> tuple[Any, str | None]:
    """``pynvml`` and None, or None and why it cannot be imported (one line)."""
    try:
        return importlib.import_module("pynvml"), None
    except ImportError:
        return None, NOT_INSTALLED
    except Exception as exc:  # a broken install raises anything at import
        return None, f"pynvml import failed: {type(exc).__name__}: {exc}"

# NVML return codes (nvml.h); the module's own constants win when it has them.
_CODES = {
    "NVML_ERROR_UNINITIALIZED": 1,
    "NVML_ERROR_FUNCTION_NOT_FOUND": 13,
    "NVML_ERROR_GPU_IS_LOST": 15,
    "NVML_ERROR_RESET_REQUIRED": 16,
}
_ENUMS = {"NVML_CLOCK_SM": 1, "NVML_CLOCK_MEM": 2, "NVML_TEMPERATURE_GPU": 0}


def _const(nvml: Any, name: str) -> int:
    value = getattr(nvml, name, None)
    return value if isinstance(value, int) else {**_CODES, **_ENUMS}[name]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def error_text(nvml: Any, exc: BaseException) -> tuple[str, int | None]:
    """(reason text, NVML return code or None) for an exception from ``nvml``."""
    err_type = getattr(nvml, "NVMLError", None)
    if isinstance(err_type, type) and isinstance(exc, err_type):
        code = getattr(exc, "value", None)
        try:
            text = str(exc)
        except Exception:  # pynvml's __str__ itself calls into NVML
            text = f"NVML error {code}"
        return text, code if isinstance(code, int) else None
    return f"{type(exc).__name__}: {exc}", None


class _Pass:
    """The reads of one snapshot: values in, errors out, stopping early on a fatal error."""

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        self.errors: dict[str, str] = {}
        self.fatal: str | None = None
        self.fatal_code: int | None = None
        self._fatal_codes = {
            _const(nvml, n)
            for n in ("NVML_ERROR_UNINITIALIZED", "NVML_ERROR_GPU_IS_LOST", "NVML_ERROR_RESET_REQUIRED")
        }
        self._not_found = _const(nvml, "NVML_ERROR_FUNCTION_NOT_FOUND")

    def query(self, fields: str | tuple[str, ...], funcs: str | tuple[str, ...], *args: Any) -> Any:
        """Call the first of ``funcs`` this NVML has; on error each of ``fields`` gets the reason.

        A later name in ``funcs`` is tried only when the earlier one is missing from the module
        or from the driver (Function Not Found). After a fatal error (GPU lost, NVML
        uninitialized) nothing more is called: every later field gets that reason at once.
        """
        fields = (fields,) if isinstance(fields, str) else fields
        funcs = (funcs,) if isinstance(funcs, str) else funcs
        if self.fatal is not None:
            self._fail(fields, self.fatal)
            return None
        reason = f"not in this nvidia-ml-py ({funcs[0]})"
        for name in funcs:
            func = getattr(self.nvml, name, None)
            if not callable(func):
                continue
            try:
                return func(*args)
            except Exception as exc:
                reason, code = error_text(self.nvml, exc)
                if code in self._fatal_codes:
                    self.fatal, self.fatal_code = reason, code
                    break
                if code != self._not_found:
                    break
        self._fail(fields, reason)
        return None

    def _fail(self, fields: tuple[str, ...], reason: str) -> None:
        for name in fields:
            self.errors.setdefault(name, reason)


class NvmlReader:
    """Reads one GPU through NVML. Safe to call from a background thread; never raises.

    ``nvml`` is the ``pynvml`` module (imported lazily when None) or a stand-in for tests.
    """

    def __init__(self, index: int = 0, nvml: Any = None) -> None:
        self.index = index
        self._nvml = nvml
        self._lock = threading.RLock()
        self._tried = False
        self._inited = False
        self._reason: str | None = None
        self._handle: Any = None
        self._names: dict[int, str] = {}

    @property
    def reason(self) -> str | None:
        """Why NVML could not be opened (None when it is open or not tried yet)."""
        return self._reason

    def open(self) -> bool:
        """Import pynvml and init NVML once; False (see ``reason``) when that failed."""
        with self._lock:
            if self._tried:
                return self._inited
            self._tried = True
            if self._nvml is None:
                self._nvml, self._reason = import_pynvml()
                if self._nvml is None:
                    return False
            init = getattr(self._nvml, "nvmlInit", None)
            try:
                if not callable(init):
                    raise AttributeError("nvmlInit missing")
                init()
            except Exception as exc:
                self._reason = error_text(self._nvml, exc)[0]
                return False
            self._inited, self._reason = True, None
            return True

    def close(self) -> None:
        """Shut NVML down (if we opened it); a later ``open()`` or ``snapshot()`` tries again."""
        with self._lock:
            if self._inited:
                try:
                    self._nvml.nvmlShutdown()
                except Exception as exc:
                    log.debug("nvmlShutdown: %s", exc)
            self._tried = self._inited = False
            self._reason = self._handle = None
            self._names.clear()

    def __enter__(self) -> NvmlReader:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def snapshot(self, own_pids: Iterable[int] | None = None) -> GpuSnapshot:
        """Read every field in one pass. ``own_pids`` (plus this process) are not "other"."""
        pids = frozenset(own_pids or ()) | {os.getpid()}
        try:
            with self._lock:
                if not self.open():
                    return GpuSnapshot.unavailable(self._reason or "NVML unavailable", self.index, pids)
                return self._read(pids)
        except Exception as exc:  # last line of defence: the UI must never see an exception
            log.exception("NVML snapshot")
            return GpuSnapshot.unavailable(f"internal error: {type(exc).__name__}: {exc}", self.index, pids)

    # ------------------------------------------------------------------ one pass
    def _read(self, own_pids: frozenset[int]) -> GpuSnapshot:
        nv, q = self._nvml, _Pass(self._nvml)
        started = time.time()
        v: dict[str, Any] = {"driver_version": _text(q.query("driver_version", "nvmlSystemGetDriverVersion"))}
        device_fields = tuple(f for f in NVML_FIELDS if f != "driver_version")
        if self._handle is None:
            self._handle = q.query(device_fields, "nvmlDeviceGetHandleByIndex", self.index)
        h = self._handle
        if h is None:
            reason = q.fatal or f"GPU {self.index}: {q.errors.get('name', 'not found')}"
            self._after_fatal(q)
            return GpuSnapshot(index=self.index, own_pids=own_pids, time=started, errors=q.errors,
                               reason=reason, driver_version=v["driver_version"])

        sm, mem = _const(nv, "NVML_CLOCK_SM"), _const(nv, "NVML_CLOCK_MEM")
        v["name"] = _text(q.query("name", "nvmlDeviceGetName", h))
        v["uuid"] = _text(q.query("uuid", "nvmlDeviceGetUUID", h))
        util = q.query(("utilization_gpu_pct", "utilization_mem_pct"), "nvmlDeviceGetUtilizationRates", h)
        v["utilization_gpu_pct"] = _attr(util, "gpu")
        v["utilization_mem_pct"] = _attr(util, "memory")
        meminfo = q.query(("memory_used_bytes", "memory_total_bytes"), "nvmlDeviceGetMemoryInfo", h)
        v["memory_used_bytes"] = _attr(meminfo, "used")
        v["memory_total_bytes"] = _attr(meminfo, "total")
        v["sm_clock_mhz"] = _int(q.query("sm_clock_mhz", "nvmlDeviceGetClockInfo", h, sm))
        v["mem_clock_mhz"] = _int(q.query("mem_clock_mhz", "nvmlDeviceGetClockInfo", h, mem))
        v["sm_clock_max_mhz"] = _int(q.query("sm_clock_max_mhz", "nvmlDeviceGetMaxClockInfo", h, sm))
        v["power_w"] = _watts(q.query("power_w", "nvmlDeviceGetPowerUsage", h))
        v["power_limit_w"] = _watts(q.query(
            "power_limit_w", ("nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPowerManagementLimit"), h))
        v["temperature_c"] = _int(q.query(
            "temperature_c", ("nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature"), h,
            _const(nv, "NVML_TEMPERATURE_GPU")))
        mask = q.query("clock_event_reasons", ("nvmlDeviceGetCurrentClocksEventReasons",
                                               "nvmlDeviceGetCurrentClocksThrottleReasons"), h)
        v["clock_event_reasons"] = None if mask is None else decode_clock_event_reasons(mask)
        v["processes"] = self._processes(q, h)

        self._after_fatal(q)
        return GpuSnapshot(index=self.index, own_pids=own_pids, time=started, errors=q.errors,
                           reason=q.fatal, **v)

    def _processes(self, q: _Pass, handle: Any) -> tuple[GpuProcess, ...] | None:
        infos = q.query("processes", "nvmlDeviceGetComputeRunningProcesses", handle)
        if infos is None:
            return None
        out = []
        for info in infos:
            pid = int(info.pid)
            name = self._names.get(pid)
            if name is None:
                # No field: a name NVML cannot give (another container, permissions) is just ''.
                name = _text(q.query((), "nvmlSystemGetProcessName", pid)) or ""
                if name:
                    self._names[pid] = name
            out.append(GpuProcess(pid, _int(getattr(info, "usedGpuMemory", None)), name))
        if len(self._names) > 256:
            live = {p.pid for p in out}
            self._names = {k: n for k, n in self._names.items() if k in live}
        return tuple(out)

    def _after_fatal(self, q: _Pass) -> None:
        """After GPU lost, drop the handle; after Uninitialized, NVML must be inited again."""
        if q.fatal is None:
            return
        self._handle = None
        if q.fatal_code == _const(self._nvml, "NVML_ERROR_UNINITIALIZED"):
            self._tried = self._inited = False


def _attr(obj: Any, name: str) -> int | None:
    return None if obj is None else _int(getattr(obj, name, None))


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _watts(milliwatts: Any) -> float | None:
    return None if milliwatts is None else milliwatts / 1000.0
