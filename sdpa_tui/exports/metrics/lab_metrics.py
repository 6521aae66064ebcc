"""The live session as Prometheus metrics: a custom collector for ``prometheus_client``.

The owner of a :class:`Session` (the exporter's record thread, the TUI's event loop) calls
:meth:`LatestMetrics.publish` from its own thread; that builds the metric families at once and
swaps them in, and the HTTP server's thread only ever reads the last published list. So a scrape
never sees a session half-way through a change, and the session needs no lock of its own.

Naming follows Prometheus' conventions: one prefix (``sdpa_tui_``), base units (seconds, bytes,
hertz, watts, ratios 0..1), ``_info`` for text that identifies something. The three clocks are
gauges with a ``quantile`` label (0.5 and 0.9) rather than summaries: they are quantiles over the
session's sliding window, which starts again whenever the workload or a flag changes, so there is
no ever-growing ``_count``/``_sum`` a summary promises. ``sdpa_tui_samples`` says how many values
each window holds. Labels never carry tensor shapes, except the one series of
``sdpa_tui_workload_info``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

from ...core.backends import ALL_BACKENDS
from ...core.lab.session import BackendRow, Session
from ...core.protocol.records import Environment
from ...core.stats import Summary
from ...core.status import Status
from ...telemetry.gpu_snapshot import GpuSnapshot

PREFIX = "sdpa_tui"
QUANTILES = (("0.5", "median"), ("0.9", "p90"))
CLOCKS = (
    ("kernel", "kernel_us", "Sum of the GPU kernel durations of one SDPA call (CUPTI); on the CPU, ATen self time"),
    ("gpu", "gpu_us", "Device time per SDPA call without host launch overhead (CUDA graph replay)"),
    ("eager", "eager_us", "Host-timed time per SDPA call in a back-to-back eager loop"),
)
STATUSES = tuple(Status)
_US = 1e-6


def _gauge(name: str, doc: str, labels: Iterable[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=list(labels))


def _eligible(row: BackendRow) -> float | None:
    verdict = row.eligibility or (row.status if row.status in (Status.OK, Status.NOT_ELIGIBLE) else "")
    return {Status.OK: 1.0, Status.NOT_ELIGIBLE: 0.0}.get(verdict)


def _dispatch_env_info(env: Environment, d: list[str]) -> Metric:
    """What else decides dispatch, as found when the engine started (``core/dispatch_environment.py``)."""
    info = InfoMetricFamily(f"{PREFIX}_dispatch_environment",
                            "The cuDNN library loaded, the Flash implementation, SDPA flags and variables at start",
                            labels=["device"])
    cudnn, flash = env.cudnn_loaded, env.flash_impl
    info.add_metric(d, {
        "cudnn_path": cudnn.path if cudnn else "", "cudnn_version": (cudnn.version or "") if cudnn else "",
        "cudnn_built_with": (cudnn.built_with or "") if cudnn else "",
        "cudnn_shadowed": str(bool(cudnn and cudnn.shadowed)).lower(),
        "flash_impl": (flash.current or "default") if flash else "",
        "sdp_flags_off": ",".join(k for k in ("flash", "mem_efficient", "math", "cudnn") if env.sdp_flags.get(k) is False),
        "deterministic": str(bool(env.sdp_flags.get("deterministic"))).lower(),
        "sdpa_env": ",".join(f"{k}={v}" for k, v in env.sdpa_env.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")),
    })
    return info


def session_families(session: Session, requested_device: str) -> list[Metric]:
    """What the engine measured: clocks, status, eligibility, SDPA's pick, kernels, environment."""
    env = session.environment
    device = env.device if env else requested_device
    d = [device]
    families: list[Metric] = []

    ready = _gauge("engine_ready", "1 once the engine process reported its environment", ["device"])
    ready.add_metric(d, 1.0 if env else 0.0)
    families.append(ready)
    if env:
        info = InfoMetricFamily(f"{PREFIX}_environment", "The device measured on and the software versions",
                                labels=["device"])
        info.add_metric(d, {"device_name": env.device_name, "torch_version": env.torch_version,
                            "cuda_version": env.cuda_version or "", "cudnn_version": env.cudnn_version or "",
                            "sm": env.sm or ""})
        families.append(info)
        families.append(_dispatch_env_info(env, d))
    w = session.workload
    workload = InfoMetricFamily(f"{PREFIX}_workload", "The workload measured (one series per device)",
                                labels=["device"])
    workload.add_metric(d, {"workload": w.describe(), "dtype": w.dtype, "mask": w.mask, "direction": w.direction})
    flops = _gauge("workload_flops", "Floating point operations of one SDPA call of the workload", ["device"])
    flops.add_metric(d, float(w.flops))
    families += [workload, flops]

    rows = session.rows()
    for clock, attr, doc in CLOCKS:
        family = _gauge(f"{clock}_seconds", f"{doc}; quantiles over the current window", ["device", "backend", "quantile"])
        for row in rows:
            summary: Summary | None = getattr(row, attr)
            if summary is not None:
                for q, field in QUANTILES:
                    family.add_metric([device, row.backend.value, q], getattr(summary, field) * _US)
        families.append(family)
    samples = _gauge("samples", "Values in the window the clock quantiles are taken over", ["device", "backend", "clock"])
    for row in rows:
        for clock, attr, _ in CLOCKS:
            summary = getattr(row, attr)
            samples.add_metric([device, row.backend.value, clock], float(summary.count if summary else 0))
    families.append(samples)

    enabled = _gauge("backend_enabled", "1 when the backend's flag is on", ["device", "backend"])
    eligible = _gauge("backend_eligible", "1 when torch can run the backend on this workload, 0 when not",
                      ["device", "backend"])
    status = _gauge("backend_status", "1 for the backend's current status", ["device", "backend", "status"])
    per_call = _gauge("kernels_per_call", "GPU activities (kernels, memsets, copies) in one call", ["device", "backend"])
    kernel = InfoMetricFamily(f"{PREFIX}_main_kernel", "The main kernel one call of the backend runs",
                              labels=["device", "backend"])
    peak = _gauge("peak_memory_bytes", "Extra device memory one call of the backend needed", ["device", "backend"])
    for row in rows:
        labels = [device, row.backend.value]
        enabled.add_metric(labels, 1.0 if row.enabled else 0.0)
        verdict = _eligible(row)
        if verdict is not None:
            eligible.add_metric(labels, verdict)
        for name in STATUSES:
            status.add_metric(labels + [name], 1.0 if row.status == name else 0.0)
        if row.main_kernel_full:
            kernel.add_metric(labels, {"kernel": row.main_kernel_full, "kernel_short": row.main_kernel or ""})
            per_call.add_metric(labels, float(row.kernels_per_call or 0))
        if row.peak_mib is not None:
            peak.add_metric(labels, row.peak_mib * 2**20)
    last = _gauge("last_sample_timestamp_seconds", "Unix time of the backend's latest timing sample "
                  "(stale numbers: the engine stopped or is paused)", ["device", "backend"])
    for backend, state in session.backends.items():
        if state.last_sample_time:
            last.add_metric([device, backend.value], state.last_sample_time)
    families += [enabled, eligible, status, kernel, per_call, peak, last]

    choice = _gauge("dispatch_choice", "1 for the backend SDPA picks with the current flags (all 0: no kernel)",
                    ["device", "backend"])
    if session.dispatch is not None:
        for backend in ALL_BACKENDS:
            choice.add_metric([device, backend.value], 1.0 if session.dispatch.choice == backend else 0.0)
    families.append(choice)
    return families


NVML_GAUGES = (
    ("utilization_ratio", "utilization_gpu_pct", 0.01, "Fraction of the sample period a kernel was running (NVML)"),
    ("memory_utilization_ratio", "utilization_mem_pct", 0.01, "Fraction of the sample period device memory was read or written"),
    ("memory_used_bytes", "memory_used_bytes", 1.0, "Device memory in use"),
    ("memory_total_bytes", "memory_total_bytes", 1.0, "Device memory in all"),
    ("sm_clock_hertz", "sm_clock_mhz", 1e6, "Current SM clock"),
    ("sm_clock_max_hertz", "sm_clock_max_mhz", 1e6, "Maximum SM clock"),
    ("memory_clock_hertz", "mem_clock_mhz", 1e6, "Current memory clock"),
    ("power_watts", "power_w", 1.0, "Power draw"),
    ("power_limit_watts", "power_limit_w", 1.0, "Power limit"),
    ("temperature_celsius", "temperature_c", 1.0, "GPU temperature"),
)


def gpu_families(gpu: GpuSnapshot | None, device: str) -> list[Metric]:
    """The NVML gauges of the GPU being measured on; a field NVML could not read has no series."""
    up = _gauge("nvml_up", "1 when NVML could read the GPU measured on", ["device"])
    up.add_metric([device], 1.0 if gpu is not None and gpu.available else 0.0)
    families: list[Metric] = [up]
    if gpu is None or not gpu.available:
        return families
    for name, attr, scale, doc in NVML_GAUGES:
        value = getattr(gpu, attr)
        family = _gauge(f"nvml_{name}", doc, ["device"])
        if value is not None:
            family.add_metric([device], float(value) * scale)
        families.append(family)
    throttled = _gauge("nvml_throttled", "1 when a clock event reason that slows kernels is active", ["device"])
    reasons = _gauge("nvml_clock_event_reason", "1 for each active clock event reason (NVML)", ["device", "reason"])
    if gpu.clock_event_reasons is not None:
        throttled.add_metric([device], 1.0 if gpu.throttled else 0.0)
        for reason in gpu.clock_event_reasons:
            reasons.add_metric([device, reason], 1.0)
    others = _gauge("nvml_other_processes", "Compute processes on the GPU other than the engine (they disturb timing)",
                    ["device"])
    if gpu.processes is not None:
        others.add_metric([device], float(len(gpu.other_processes)))
    return families + [throttled, reasons, others]


class LatestMetrics(Collector):
    """A collector that serves the families last built by :meth:`publish` (see the module docstring)."""

    def __init__(self, device: str) -> None:
        self.device = device
        self._families: list[Metric] = gpu_families(None, device)

    def publish(self, session: Session, gpu: GpuSnapshot | None) -> None:
        """Build the families now, on the caller's thread (the one that owns ``session``)."""
        device = session.environment.device if session.environment else self.device
        self._families = session_families(session, self.device) + gpu_families(gpu, device)

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)

    def describe(self) -> Iterator[Metric]:
        return iter(())  # the set of families changes with the engine's state: no fixed description
