"""Screenshots of every GPU of this host in the real app (run on a GPU machine).

    python3 scripts/screenshots/gpus_screenshot.py --out OUT [--devices all] [--width 120 --height 40]

Saves ``gpus-overview.svg`` (one engine, the overview of every GPU) and
``gpus-side-by-side.svg`` (``--devices``: one engine per GPU, the same workload side by
side), and prints the side-by-side table as text. Works with one GPU too.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from screenshots import wait_until  # noqa: E402

from sdpa_tui.commands.monitor import make_app  # noqa: E402
from sdpa_tui.core.backends import ALL_BACKENDS  # noqa: E402
from sdpa_tui.core.lab.across_gpus import parse_devices  # noqa: E402
from sdpa_tui.core.workload import Workload  # noqa: E402
from sdpa_tui.telemetry.host_gpus import gpu_count  # noqa: E402

TIMEOUT_S = 180.0


def measured(session) -> bool:
    return session.environment is not None and session.dispatch is not None and any(
        len(s.gpu) >= 5 or len(s.eager) >= 5 for s in session.backends.values())


async def shoot(out: Path, devices: tuple[int, ...], size: tuple[int, int]) -> None:
    app = make_app(Workload(), ALL_BACKENDS, "cuda:0", str(out / "exports"))
    async with app.run_test(size=size) as pilot:
        ok = await wait_until(lambda: measured(app.session) and app.host_gpus is not None, TIMEOUT_S)
        await pilot.pause(1.5)
        print(f"overview: measured={ok}, GPUs seen by NVML: {app.host_gpus.count if app.host_gpus else 0}")
        app.save_screenshot(str(out / "gpus-overview.svg"))
    app = make_app(Workload(), ALL_BACKENDS, export_dir=str(out / "exports"), devices=devices)
    async with app.run_test(size=size) as pilot:
        def all_measured() -> bool:
            sessions = {**app.controller.sessions_by_gpu, app.lab_gpus.watched_gpu: app.session}
            return all(i in sessions and measured(sessions[i]) for i in devices)

        ok = await wait_until(all_measured, TIMEOUT_S)
        await pilot.pause(2.0)
        print(f"side by side on GPUs {devices}: all measured={ok}")
        app.save_screenshot(str(out / "gpus-side-by-side.svg"))
        print("\n".join(strip.text for strip in app.screen._compositor.render_strips()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpus-shots")
    parser.add_argument("--devices", default="all")
    parser.add_argument("--width", type=int, default=120)
    parser.add_argument("--height", type=int, default=40)
    args = parser.parse_args()
    count, why = gpu_count()
    try:
        devices = parse_devices(args.devices, count, why)
    except ValueError as exc:
        print(f"gpus_screenshot.py: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    asyncio.run(shoot(out, devices, (args.width, args.height)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
