"""``sdpa-tui report --devices all|0,1``: the same workload on several GPUs at once.

One engine process per GPU, all measuring at the same time (each in :func:`measure` on its
own thread: the threads only wait on pipes). NVML is read meanwhile, so a GPU that was
throttled or shared while it was measured says so. Prints one table per GPU, the GPUs side
by side, and a line naming outliers; ``--json`` / ``--markdown`` write the same.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from rich.console import Console

from ..core.backends import Backend
from ..core.lab.across_gpus import GpuResult, comparison_dict, find_outliers, outlier_line, result_from_session
from ..core.lab.session import Session
from ..core.workload import Workload
from ..engine.host import device_engines
from ..engine.host.client import descendants
from ..engine.host.headless import EngineFailed, Progress, measure
from ..exports.files.atomic import write_text_atomic
from ..exports.lab.gpu_tables import markdown_comparison, rich_comparison
from ..exports.lab.report_data import report_dict
from ..exports.lab.report_tables import markdown_report, rich_report
from ..telemetry.host_gpus import HostGpuPoller, HostGpus
from .console_output import print_out, stdout_console
from .exit_codes import EXIT_ENGINE

NVML_INTERVAL_S = 1.0


class GpuStates:
    """What NVML saw on each GPU while measuring: throttle reasons and other processes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[int, set[str]] = {}

    def add(self, host: HostGpus) -> None:
        ours = descendants(os.getpid())  # the engines and their profiler processes share nothing with a user
        with self._lock:
            for gpu in host.gpus:
                seen = self._seen.setdefault(gpu.index, set())
                if gpu.throttled:
                    seen.update(f"throttled: {r}" for r in gpu.clock_event_reasons or ())
                for p in gpu.other_processes:
                    if p.pid not in ours:
                        seen.add(f"shared: pid {p.pid} {p.name}".strip())

    def text(self) -> dict[int, str]:
        with self._lock:
            return {i: "; ".join(sorted(s)) or "ok" for i, s in self._seen.items()}


def measure_devices(workload: Workload, backends: tuple[Backend, ...], devices: tuple[int, ...],
                    duration_s: float, on_progress=None, **options) -> dict[int, Session | EngineFailed]:
    """Measure on every GPU in ``devices`` at once; a GPU whose engine failed maps to the error."""

    def one(index: int) -> Session | EngineFailed:
        def progress(p: Progress) -> None:
            if on_progress:
                on_progress(index, p)

        try:
            return measure(workload, backends, device_engines.engine_device(index), duration_s=duration_s, on_progress=progress,
                           **options)
        except EngineFailed as exc:
            return exc

    with ThreadPoolExecutor(max_workers=len(devices), thread_name_prefix="sdpa-tui-gpu") as pool:
        return dict(zip(devices, pool.map(one, devices)))


def run_devices_report(args: argparse.Namespace, workload: Workload, backends: tuple[Backend, ...]) -> int:
    out = stdout_console()
    err = Console(stderr=True)
    devices: tuple[int, ...] = args.devices
    states = GpuStates()
    poller = HostGpuPoller(states.add, interval=NVML_INTERVAL_S)
    status_by_gpu: dict[int, str] = {i: "starting the engine" for i in devices}
    poller.start()
    try:
        with err.status("starting the engines", spinner="dots") as status:

            def progress(index: int, p: Progress) -> None:
                status_by_gpu[index] = f"{p.done_backends}/{p.total_backends}"
                status.update(" · ".join(f"GPU {i}: {s}" for i, s in sorted(status_by_gpu.items()))
                              + f" backends done · {p.elapsed_s:.0f} s")

            outcome = measure_devices(workload, backends, devices, args.duration, progress,
                                      legacy_api=args.legacy_api, priority=args.priority)
    finally:
        poller.stop()
    gpu_states = states.text()
    results: list[GpuResult] = []
    failed = False
    for index in devices:
        got = outcome[index]
        if isinstance(got, EngineFailed):
            failed = True
            out.print(f"[bold]GPU {index}[/]: [bold red]the engine failed:[/] {got}")
            results.append(GpuResult(index, note=f"engine failed: {got}"))
            continue
        out.rule(f"GPU {index}", align="left")
        print_out(out, rich_report(got, out.width))
        results.append(result_from_session(index, got))
    print_out(out, rich_comparison(results, gpu_states))
    outliers = find_outliers(results)
    out.print(outlier_line(outliers, len(results)), style="bold red" if outliers else "")
    try:
        if args.json:
            data = {"devices": [{"gpu": i, **({"error": str(outcome[i])} if isinstance(outcome[i], EngineFailed)
                                              else {"report": report_dict(outcome[i])}),
                                 "gpu_state": gpu_states.get(i, "")} for i in devices],
                    "comparison": comparison_dict(results)}
            write_text_atomic(args.json, json.dumps(data, indent=2) + "\n")
            err.print(f"wrote {args.json}")
        if args.markdown:
            parts = [f"## GPU {i}\n\n" + (f"the engine failed: {outcome[i]}\n" if isinstance(outcome[i], EngineFailed)
                                           else markdown_report(outcome[i])) for i in devices]
            parts.append("## Side by side\n\n" + markdown_comparison(results, gpu_states) + "\n"
                         + outlier_line(outliers, len(results)) + "\n")
            write_text_atomic(args.markdown, "\n".join(parts))
            err.print(f"wrote {args.markdown}")
    except OSError as exc:
        err.print(f"[bold red]sdpa-tui: could not write {exc.filename}:[/] {exc.strerror}")
        return EXIT_ENGINE
    return EXIT_ENGINE if failed else 0
