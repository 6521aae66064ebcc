"""The per-GPU comparison (``--devices``) as a Rich table, Markdown and plain rows."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.table import Table
from rich.text import Text

from ...core.lab.across_gpus import GpuResult, clock_for, find_outliers, ratios_to_fastest
from ...core.units import us_number

HEADERS = ("GPU", "name", "SDPA picks", "main kernel", "kernel µs", "GPU/call µs", "eager/call µs",
           "× fastest", "GPU state")


def comparison_rows(results: Sequence[GpuResult], states: dict[int, str] | None = None,
                    clock: str | None = None) -> list[tuple[str, ...]]:
    """One row of cells per GPU (see ``HEADERS``); ``states``: what NVML saw on each GPU."""
    ratios = ratios_to_fastest(results, clock or clock_for(results))
    states = states or {}
    rows = []
    for r in results:
        ratio = ratios.get(r.gpu)
        rows.append((
            str(r.gpu), r.device_name or "?", r.backend or "none", r.kernel or (r.note or "–"),
            us_number(r.kernel_us), us_number(r.gpu_us), us_number(r.eager_us),
            "–" if ratio is None else f"{ratio:.2f}", states.get(r.gpu, ""),
        ))
    return rows


def rich_comparison(results: Sequence[GpuResult], states: dict[int, str] | None = None,
                    threshold: float = 0.10, clock: str | None = None) -> Table:
    clock = clock or clock_for(results)
    slow = {o.gpu for o in find_outliers(results, threshold)}
    table = Table(box=box.SIMPLE_HEAD, title=f"the same workload on {len(results)} GPUs (× fastest: {clock} clock)",
                  title_justify="left")
    for header in HEADERS:
        table.add_column(header, justify="right" if header.endswith(("µs", "fastest")) or header == "GPU" else "left",
                         overflow="fold")
    for r, cells in zip(results, comparison_rows(results, states, clock)):
        style = "bold red" if r.gpu in slow else ""
        table.add_row(*(Text(c, style=style) for c in cells))
    return table


def markdown_comparison(results: Sequence[GpuResult], states: dict[int, str] | None = None,
                        clock: str | None = None) -> str:
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"
              for cells in comparison_rows(results, states, clock)]
    return "\n".join(lines) + "\n"
