"""Take the README's screenshots from the real app on this machine (GPU or CPU).

    python3 scripts/screenshots/screenshots.py --device cuda --out docs/screenshots/

Runs the real engine, waits for live numbers, and saves SVG screens: the default view,
Flash's flag off, and an fp32 workload (where Flash and cuDNN are not eligible).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sdpa_tui.commands.monitor import make_app  # noqa: E402
from sdpa_tui.core.backends import ALL_BACKENDS  # noqa: E402
from sdpa_tui.core.workload import Workload  # noqa: E402


async def wait_until(check, timeout: float) -> bool:
    """Poll ``check`` every 0.25 s while the app runs; False when ``timeout`` seconds passed first.
    (The other screenshot scripts import it from here.)"""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if check():
            return True
        await asyncio.sleep(0.25)
    return False


async def wait_for_samples(app, backends, timeout: float = 120.0, count: int = 8) -> None:
    """Until every backend that runs has ``count`` samples (or a verdict)."""
    def ready() -> bool:
        states = [app.session.backends[b] for b in backends]
        return app.session.environment is not None and all(
            s.status in ("not_eligible", "error", "oom", "disabled") or len(s.eager) >= count for s in states)

    await wait_until(ready, timeout)


async def shoot(device: str, out: Path, size: tuple[int, int], tag: str) -> list[Path]:
    saved = []
    app = make_app(Workload(), ALL_BACKENDS, device, str(out / "exports"))
    async with app.run_test(size=size) as pilot:
        await wait_for_samples(app, ALL_BACKENDS)
        await pilot.pause(1.0)
        saved.append(Path(app.save_screenshot(str(out / f"default-{tag}.svg"))))
        await pilot.press("f")
        await pilot.pause(1.0)
        await wait_for_samples(app, ALL_BACKENDS)
        await pilot.pause(1.0)
        saved.append(Path(app.save_screenshot(str(out / f"flash-off-{tag}.svg"))))
        await pilot.press("f")
        app.set_workload(app.session.workload.with_changes(dtype="fp32"))
        await pilot.pause(1.0)
        await wait_for_samples(app, ALL_BACKENDS)
        await pilot.pause(1.0)
        saved.append(Path(app.save_screenshot(str(out / f"fp32-not-eligible-{tag}.svg"))))
    return saved


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", default="docs/screenshots")
    parser.add_argument("--width", type=int, default=140)
    parser.add_argument("--height", type=int, default=45)
    parser.add_argument("--tag", default=None, help="file name suffix (default: the device)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for path in asyncio.run(shoot(args.device, out, (args.width, args.height), args.tag or args.device.replace(":", ""))):
        print(f"saved {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
