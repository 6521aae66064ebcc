"""Shared test setup: the ``cuda`` marker skips a test where no CUDA GPU is visible; the
``browser`` marker skips one where Debian's chromium or the playwright package is missing; Ctrl-C reaches the
programs the tests start as it does from a terminal; pytest-xdist's groups keep a module on one worker and the GPU
tests on one."""

from __future__ import annotations

import functools
import importlib.util
import os
import signal
import subprocess
import sys

import pytest

# A shell without job control starts a background command (`bash .ci/run &`, nohup) with SIGINT ignored, and an
# ignored signal stays ignored in every program started from it: the programs the Ctrl-C tests interrupt would not
# see it (seen: `report` ran on and exited 0). A handler of this process's own is reset to the default at exec.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

_PROBE = """
import torch
if torch.cuda.is_available():
    print("yes")
else:
    print("no CUDA GPU is visible" if torch.version.cuda else "this torch build has no CUDA")
"""


@functools.lru_cache(maxsize=1)
def cuda_available() -> tuple[bool, str]:
    """Whether torch sees a CUDA GPU: asked of the torch a test module imported already, else in a child process
    (importing torch costs seconds: a run of UI tests alone need not pay it)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        if torch.cuda.is_available():
            return True, ""
        return False, "needs a CUDA GPU: " + ("no CUDA GPU is visible" if torch.version.cuda
                                              else "this torch build has no CUDA")
    try:
        proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"could not ask torch about CUDA: {exc}"
    answer = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr.strip()[-200:]
    if proc.returncode == 0 and answer == "yes":
        return True, ""
    return False, f"needs a CUDA GPU: {answer}"


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None (``.ci/run`` installs both)."""
    chromium = os.environ.get("SDPA_TUI_CHROMIUM", "/usr/bin/chromium")
    if not os.access(chromium, os.X_OK):
        return f"needs Debian's chromium at {chromium} (apt-get install chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "needs the playwright package (pip install -e '.[test]')"
    return None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        # pytest-xdist's workers (addopts: -n 2 --dist loadgroup) take a module whole, so its module-scoped fixtures
        # (an engine, a watched run) run once; the cuda tests all go to one worker, so one GPU test runs at a time
        item.add_marker(pytest.mark.xdist_group("cuda" if item.get_closest_marker("cuda") else item.nodeid.split("::", 1)[0]))
    browser_items = [item for item in items if item.get_closest_marker("browser")]
    why_not = browser_missing() if browser_items else None
    for item in browser_items if why_not else ():
        item.add_marker(pytest.mark.skip(reason=why_not))
    cuda_items = [item for item in items if item.get_closest_marker("cuda")]
    if not cuda_items:
        return
    available, why = cuda_available()
    if available:
        return
    skip = pytest.mark.skip(reason=why)
    for item in cuda_items:
        item.add_marker(skip)
