"""Eager timing here (one thread, as the engine) alternated with bursts in one real profiler process: per round the
eager calls, the burst's calls, each side's CPU share (CPU time over wall time), the profiler process's system time,
minor page faults and per-thread CPU time. docs/lab-notes/cpu-kernel-clock.md.

    PYTHONPATH=$PWD python3 scripts/diagnostics/diag_cpu_bursts.py SEQ DTYPE ROUNDS BACKEND   # e.g. 1024 fp16 5 FLASH
"""
import os
import statistics
import sys
import time

import torch

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.protocol.engine_commands import CaptureKernels
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.measuring import clocks, cpu_threads
from sdpa_tui.engine.measuring.sdpa_call import Inputs, forced
from sdpa_tui.engine.profiler.profiler_client import ProfilerClient

TCK = os.sysconf("SC_CLK_TCK")
def proc_cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TCK
def threads(pid):
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        raw = open(f"/proc/{pid}/task/{t}/stat").read()
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        f = raw.rsplit(")", 1)[1].split()
        out[f"{t}:{name}"] = round((int(f[11]) + int(f[12])) / TCK, 2)
    return out
def proc_sys_faults(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[12]) / TCK, int(f[7])

def main():
    seq, dtype, rounds, backend = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Backend[sys.argv[4]]
    cpu_threads.leave_a_core()
    w = Workload(batch=2, heads=8, kv_heads=8, seq=seq, kv_seq=seq, head_dim=64, dtype=dtype)
    step = Inputs.make(w, torch.device("cpu")).step()
    client = ProfilerClient("cpu")
    client.wait_ready()
    print("   profiler threads' CPU s at Ready:", threads(client.pid), flush=True)
    ratios, eshare, kshare = [], [], []
    try:
        with forced((backend,)):
            for _ in range(3):
                step()
            for r in range(rounds):
                step()
                c0, t0, mf0 = time.thread_time(), time.perf_counter(), proc_sys_faults(os.getpid())[1]
                e = [clocks.eager_us(step, torch.device("cpu"), 1) for _ in range(3)]
                es = (time.thread_time() - c0) / (time.perf_counter() - t0)
                print(f"   eager calls {[round(x) for x in e]} minor faults here {proc_sys_faults(os.getpid())[1] - mf0}", flush=True)
                (s0, f0), p0, t0 = proc_sys_faults(client.pid), proc_cpu(client.pid), time.perf_counter()
                cap = client.capture(CaptureKernels(1, w, backend, 3, ""), 600)
                ks = (proc_cpu(client.pid) - p0) / (time.perf_counter() - t0)
                s1, f1 = proc_sys_faults(client.pid)
                print("   profiler threads' CPU s:", threads(client.pid), flush=True)
                print(f"   burst calls {[round(k) for k in cap.kernel_us]} sys {s1 - s0:.2f} s, minor faults {f1 - f0}", flush=True)
                ratio = statistics.median(cap.kernel_us) / statistics.median(e)
                ratios.append(ratio)
                eshare.append(es)
                kshare.append(ks)
                print(f"eager {statistics.median(e):10,.0f} (cpu share {es:.2f})  kernel {statistics.median(cap.kernel_us):10,.0f} "
                      f"(profiler process cpu share {ks:.2f})  ratio {ratio:.2f}", flush=True)
    finally:
        client.close()
    print(f"median ratio {statistics.median(ratios):.2f}; cpu share eager {statistics.median(eshare):.2f} burst {statistics.median(kshare):.2f}")

if __name__ == "__main__":
    main()
