"""A fresh profiler process per trial (as in ``report``, whose kernel clock on a slow call is that process's first
burst): its first burst against the eager clock timed here (one thread, as the engine), three variants alternated:
cold (the first burst is the process's first), tiny (a tiny workload's burst first: Kineto and the process warm),
same (a throwaway burst of the same workload first). docs/lab-notes/cpu-kernel-clock.md.

    PYTHONPATH=$PWD python3 scripts/diagnostics/diag_cpu_first_burst.py SEQ DTYPE TRIALS BACKEND  # e.g. 512 fp32 4 FLASH
"""
import statistics
import sys

import torch

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.protocol.engine_commands import CaptureKernels
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.measuring import clocks, cpu_threads
from sdpa_tui.engine.measuring.sdpa_call import Inputs, forced
from sdpa_tui.engine.profiler.profiler_client import ProfilerClient


def main():
    seq, dtype, trials, backend = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Backend[sys.argv[4]]
    cpu_threads.leave_a_core()
    w = Workload(batch=2, heads=8, kv_heads=8, seq=seq, kv_seq=seq, head_dim=64, dtype=dtype)
    tiny = Workload(batch=1, heads=1, kv_heads=1, seq=32, kv_seq=32, head_dim=16, dtype=dtype)
    step = Inputs.make(w, torch.device("cpu")).step()
    res = {"cold": [], "tiny": [], "same": []}
    with forced((backend,)):
        for _ in range(3):
            step()
        for t in range(trials):
            for variant in res:
                client = ProfilerClient("cpu")
                client.wait_ready()
                try:
                    if variant == "tiny":
                        client.capture(CaptureKernels(1, tiny, backend, 3, ""), 600)
                    if variant == "same":
                        client.capture(CaptureKernels(1, w, backend, 3, ""), 600)
                    step()
                    e1 = [clocks.eager_us(step, torch.device("cpu"), 1) for _ in range(3)]
                    cap = client.capture(CaptureKernels(1, w, backend, 3, ""), 600)
                    e2 = [clocks.eager_us(step, torch.device("cpu"), 1) for _ in range(3)]
                finally:
                    client.close()
                r = statistics.median(cap.kernel_us) / statistics.median(e1 + e2)
                res[variant].append(r)
                print(f"{variant:5} eager {[round(x) for x in e1 + e2]} kernel {[round(x) for x in cap.kernel_us]} ratio {r:.2f}", flush=True)
    for v, rs in res.items():
        print(f"{v}: ratios {[round(r, 2) for r in rs]} median {statistics.median(rs):.2f}")

if __name__ == "__main__":
    main()
