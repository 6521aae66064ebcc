"""What a trainer's callback logs at a logging step: per signature, its calls, its median time and its non-finite
outputs and gradients so far, under ``sdpa/<signature>/...`` (the signature as the report's table writes it)."""

from __future__ import annotations

from ...core.calls.watch_report import WatchReport

PREFIX = "sdpa"


def step_metrics(report: WatchReport) -> dict[str, float]:
    """``sdpa/<signature>/calls``, ``.../time_us`` (where measured: kernels on CUDA, the host's clock on the CPU),
    ``.../nonfinite_outputs`` and, for calls that record autograd, ``.../nonfinite_gradients`` (sampled calls)."""
    metrics: dict[str, float] = {}
    seen: dict[str, int] = {}
    for row in report.rows:
        name = row.signature.brief() + (" compiled" if row.compiled else "")
        seen[name] = seen.get(name, 0) + 1
        key = f"{PREFIX}/{name}" + (f" #{seen[name]}" if seen[name] > 1 else "")
        metrics[f"{key}/calls"] = float(row.count)
        if row.time_us is not None:
            metrics[f"{key}/time_us"] = row.time_us
        check = row.check
        metrics[f"{key}/nonfinite_outputs"] = float(check.nonfinite if check is not None else 0)
        if row.signature.grad:
            backward = check.backward if check is not None else None
            metrics[f"{key}/nonfinite_gradients"] = float(max(backward.nonfinite.values(), default=0)
                                                          if backward is not None else 0)
    return metrics
