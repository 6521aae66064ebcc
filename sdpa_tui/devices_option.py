"""``--devices all|0,1``: measure on several GPUs at once. Counted through NVML, so the
command line never imports torch nor initialises CUDA."""

from __future__ import annotations

import argparse

from .core.gpu_compare import parse_devices
from .telemetry.host_gpus import gpu_count


def add_devices_option(parser: argparse.ArgumentParser, inherited: bool = False) -> None:
    parser.add_argument(
        "--devices", metavar="all|LIST", default=argparse.SUPPRESS if inherited else None,
        help="measure the same workload on several GPUs at once, one engine process each: 'all' or "
        "NVML indices like 0,1 (GPU N is cuda:N in PCI bus order); shows them side by side and names outliers",
    )


def resolve_devices(args: argparse.Namespace) -> None:
    """Turn ``args.devices`` into a tuple of GPU indices (None when not asked); ValueError if bad."""
    text = getattr(args, "devices", None)
    if text is None:
        args.devices = None
        return
    if getattr(args, "command", None) == "sweep":
        raise ValueError("--devices applies to the monitor and to report, not to sweep (use --device cuda:N)")
    count, why = gpu_count()
    args.devices = parse_devices(text, count, why)
