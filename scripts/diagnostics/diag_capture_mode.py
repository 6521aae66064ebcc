"""What watch's kernel warm-up does to a CUDA graph the program captures meanwhile, with and without its thread in
CUDA's relaxed stream-capture mode (issue 39; ``watch/probe/checks/kernel_warm_up.py``, ``relax_capture_mode``).

Runs the GPU test's program (``WARMED_DURING_A_CAPTURE`` in ``tests/gpu/test_watch_cuda.py``: the warm-up held until
``torch.cuda.graph`` starts capturing in the global mode, then run whole while the capture is open) in fresh
processes: once as watch runs it (``relaxed``), once with the relaxing switched off (``global``), the failure it
guards against. Prints each run's exit code, its result line and the last lines of its stderr.

    python3 scripts/diagnostics/diag_capture_mode.py [--variants relaxed,global]
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST = ROOT / "tests" / "gpu" / "test_watch_cuda.py"
SWITCH_OFF = "kernel_warm_up.relax_capture_mode = lambda: True  # the relaxing switched off\n"


def program(relaxed: bool) -> str:
    """The test's program, read from the test file (not imported: it needs pytest), the relaxing off if asked."""
    tree = ast.parse(TEST.read_text())
    text = next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
                and getattr(node.targets[0], "id", "") == "WARMED_DURING_A_CAPTURE")
    return text if relaxed else text.replace("probe = install(None)", SWITCH_OFF + "probe = install(None)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="relaxed,global")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for variant in args.variants.split(","):
        proc = subprocess.run([sys.executable, "-c", program(variant == "relaxed")], capture_output=True, text=True,
                              timeout=240, env=env, stdin=subprocess.DEVNULL)
        result = proc.stdout.strip().splitlines()[-1:] or ["(no result line)"]
        print(f"{variant}: exit {proc.returncode}, {result[0]}")
        for line in proc.stderr.strip().splitlines()[-6:]:
            print(f"  {line[:300]}")


if __name__ == "__main__":
    main()
