"""The engine's measuring processes run in one allocator regime from their start: blocks up to 32 MiB come from the
heap (memory the process has already touched, once it has run a call), larger ones are mapped anew at every call as
in any program with glibc's defaults. Before, each process settled on its own, and on the 2-core VM the live
monitor's Math clocks read 1.3 to 1.55x apart, either way round (docs/lab-notes/cpu-kernel-clock.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from sdpa_tui.engine.measuring import cpu_allocator

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")

WHERE = r"""
import json, sys
from sdpa_tui.engine.measuring.cpu_allocator import settle_allocator

settled = settle_allocator() if sys.argv[1] == "settle" else None
import torch


def on_heap(mib):
    t = torch.empty(mib << 18, dtype=torch.float32)  # as a call's scores: mib MiB through torch's posix_memalign
    heap = [[int(x, 16) for x in line.split()[0].split("-")] for line in open("/proc/self/maps")
            if line.rstrip().endswith("[heap]")]
    return any(lo <= t.data_ptr() < hi for lo, hi in heap)


print(json.dumps({"settled": settled, "20 MiB": on_heap(20), "40 MiB": on_heap(40)}))
"""


def where(mode: str, env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", WHERE, mode], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_settled_process_serves_a_calls_blocks_up_to_32_mib_from_its_heap_and_maps_larger_ones():
    assert where("default") == {"settled": None, "20 MiB": False, "40 MiB": False}, \
        "glibc's defaults map a 20 MiB block anew until the process has freed one"
    assert where("settle") == {"settled": True, "20 MiB": True, "40 MiB": False}


def test_a_users_own_malloc_setting_is_left_to_rule(monkeypatch):
    import os

    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "131072"}
    assert where("settle", env) == {"settled": False, "20 MiB": False, "40 MiB": False}
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=65536")
    assert cpu_allocator.settle_allocator() is False
