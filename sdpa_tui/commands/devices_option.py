"""``--devices all|0,1``: measure on several GPUs at once. Counted through NVML, so the
command line never imports torch nor initialises CUDA. The numbers are NVML's (PCI bus order);
under ``CUDA_VISIBLE_DEVICES`` only the GPUs it leaves visible can be measured."""

from __future__ import annotations

import argparse

from ..core.lab.across_gpus import parse_devices
from ..telemetry.device_choice import VisibleGpus, cuda_device_of, find_gpus
from ..telemetry.host_gpus import gpu_count


def add_devices_option(parser: argparse.ArgumentParser, inherited: bool = False) -> None:
    parser.add_argument(
        "--devices", metavar="all|LIST", default=argparse.SUPPRESS if inherited else None,
        help="measure the same workload on several GPUs at once, one engine process each: 'all' or "
        "NVML indices like 0,1 (PCI bus order; with CUDA_VISIBLE_DEVICES, only the GPUs it leaves); "
        "shows them side by side and names outliers",
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
    wanted = parse_devices(text, count, why)
    args.devices = visible_devices(wanted, find_gpus(), every=text.strip() == "all")


def visible_devices(wanted: tuple[int, ...], gpus: VisibleGpus, every: bool) -> tuple[int, ...]:
    """The GPUs of ``wanted`` (NVML indices) that CUDA sees from here; ``every``: all of those.
    ValueError names a GPU that ``CUDA_VISIBLE_DEVICES`` hides, or why CUDA sees none."""
    if not gpus.count:
        raise ValueError(f"--devices: {gpus.why_none}; use --device cpu to measure on the CPU")
    if every:
        visible = tuple(i for i in wanted if i in gpus.nvml_indices)
        if not visible:  # only MIG instances, which NVML's GPU numbers do not name
            raise ValueError("--devices all: CUDA sees no whole GPU here (MIG instances: use --device cuda:N)")
        return visible
    for index in wanted:
        cuda_device_of(index, gpus)  # DeviceError (a ValueError) when hidden
    return wanted
