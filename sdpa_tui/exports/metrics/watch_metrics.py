"""A watched job's SDPA calls as Prometheus metrics (``sdpa-tui watch --metrics-port PORT``).

One series per call signature and rank, so many jobs on many hosts can land in one Prometheus:
labels are a bounded signature id (``sig``: 12 hex digits of a hash of the signature), the rank
("" for a process of no rank), the host and the program; the shapes, dtype, mask, site, module and
backend of a signature are in ``sdpa_tui_watch_signature_info``, one series per signature. As
:mod:`metrics`, the report is built on the publisher's thread and swapped in whole; a scrape only
reads the last one.
"""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

from ...core.calls.watch_report import CallRow, WatchReport
from ...core.stats import Summary

PREFIX = "sdpa_tui_watch"
_US = 1e-6


def signature_id(row: CallRow) -> str:
    """Stable across runs and hosts for the same call: shapes, dtype, mask, scalars, autograd, compiled."""
    s = row.signature
    text = repr((s.q_shape, s.kv_shape, s.dtype, s.device.split(":")[0], s.mask, s.mask_shape, s.causal,
                 s.dropout_p, s.scale, s.gqa, s.grad, s.flags, row.compiled))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def report_families(report: WatchReport, host: str) -> list[Metric]:
    program = " ".join(report.program)[:200]
    base = ["sig", "rank", "host", "program"]
    info = InfoMetricFamily(f"{PREFIX}_signature", "What a signature id stands for (one series per signature)",
                            labels=["sig", "host", "program"])
    calls = CounterMetricFamily(f"{PREFIX}_calls", "SDPA calls of the signature made by the rank", labels=base)
    forward = GaugeMetricFamily(f"{PREFIX}_kernel_seconds", "One call's own GPU work (CUPTI), forward; quantiles "
                                "over the profiled calls", labels=[*base, "quantile"])
    backward = GaugeMetricFamily(f"{PREFIX}_backward_kernel_seconds", "One call's backward GPU work (CUPTI); "
                                 "quantiles over the profiled calls (all ranks)", labels=["sig", "host", "program",
                                                                                         "quantile"])
    backend = InfoMetricFamily(f"{PREFIX}_backend", "The backend the rank's calls of the signature ran",
                               labels=base)
    nonfinite = CounterMetricFamily(f"{PREFIX}_nonfinite", "Sampled calls whose SDPA output (direction forward) or "
                                    "gradients dq/dk/dv (backward) held NaN or Inf; cause: the backend, or the "
                                    "gradient from upstream or the inputs that already held it",
                                    labels=["sig", "host", "program", "backend", "direction", "cause"])
    differs = GaugeMetricFamily(f"{PREFIX}_rank_differs", "1 when a rank ran another backend or its kernel time is "
                                "off the other ranks'", labels=["sig", "host", "program"])
    for row in report.rows:
        sig = signature_id(row)
        s = row.signature
        info.add_metric([sig, host, program], {
            "q_shape": str(list(s.q_shape)), "kv_shape": str(list(s.kv_shape)), "dtype": s.dtype, "device": s.device,
            "mask": s.mask, "causal": str(s.causal).lower(), "gqa": str(s.gqa).lower(), "grad": str(s.grad).lower(),
            "compiled": str(row.compiled).lower(), "site": row.site, "module": ", ".join(row.modules) or (row.module or ""),
        })
        cells = row.per_rank or {None: None}
        for rank, cell in cells.items():
            labels = [sig, "" if rank is None else str(rank), host, program]
            calls.add_metric(labels, float(cell.count if cell else row.count))
            _quantiles(forward, labels, cell.kernel_us if cell else row.kernel_us)
            chosen = (cell.backend if cell else row.backend) or ""
            backend.add_metric(labels, {"backend": chosen})
        if row.backward is not None:
            _quantiles(backward, [sig, host, program], row.backward.kernel_us)
        _nonfinite(nonfinite, [sig, host, program], row)
        if row.per_rank:
            differs.add_metric([sig, host, program], 1.0 if row.rank_note else 0.0)
    share = GaugeMetricFamily(f"{PREFIX}_sdpa_share_of_gpu_ratio", "SDPA's share (forward and backward) of the "
                              "job's GPU time in the profiled windows", labels=["host", "program"])
    if report.sdpa_share_of_gpu is not None:
        share.add_metric([host, program], report.sdpa_share_of_gpu)
    windows = CounterMetricFamily(f"{PREFIX}_profiler_windows", "Profiler windows the job's processes ran",
                                  labels=["host", "program"])
    windows.add_metric([host, program], float(report.captures.count))
    return [info, calls, forward, backward, backend, nonfinite, differs, share, windows]


def _nonfinite(family: CounterMetricFamily, labels: list[str], row: CallRow) -> None:
    """A series per direction once its calls were checked (0 until one held NaN or Inf), so rates exist."""
    check = row.check
    if check is None:
        return
    if check.samples:
        family.add_metric([*labels, row.backend or "", "forward", "backend"], float(check.nonfinite))
    back = check.backward
    if back is not None and back.samples:
        backend = (row.backward.backend if row.backward is not None else None) or row.backend or ""
        for cause, count in (("backend", max(back.nonfinite.values(), default=0)),
                             ("upstream", back.upstream_nonfinite), ("inputs", back.inputs_nonfinite)):
            family.add_metric([*labels, backend, "backward", cause], float(count))


def _quantiles(family: GaugeMetricFamily, labels: list[str], summary: Summary | None) -> None:
    if summary is not None:
        family.add_metric([*labels, "0.5"], summary.median * _US)
        family.add_metric([*labels, "0.9"], summary.p90 * _US)


class WatchMetrics(Collector):
    """The last published report's families; ``publish`` from the watch's own thread."""

    def __init__(self, host: str | None = None) -> None:
        self.host = host or socket.gethostname()
        self._families: list[Metric] = []

    def publish(self, report: WatchReport) -> None:
        self._families = report_families(report, self.host)

    def collect(self) -> Iterator[Metric]:
        yield from self._families
