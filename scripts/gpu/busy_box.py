"""Make this machine as busy as a shared GPU box: CPU spinners and another process's work on the GPU.

Runs until killed (or ``--seconds``). ``--cpu N`` processes spin a core each; ``--gpu-duty D`` runs a bf16
matmul loop on the GPU busy for about D of every 100 ms (a neighbour's training job), with ``--gpu-mib`` of
its memory held; ``--gpu-queue N`` launches N matmuls before each wait, so the neighbour's queue is never empty
and the GPU time-slices between it and every other process (with 1, the default, it waits after each matmul and
others' kernels slip in between). Prints one line saying what it does, then what it did when stopped.

    python3 scripts/gpu/busy_box.py --cpu 12 --gpu-duty 0.5 &      # then run the tests; kill it after
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import signal
import sys
import time


def spin() -> None:
    while True:
        time.perf_counter()


def gpu_neighbour(duty: float, mib: int, queue: int, stop_at: float, stop) -> None:
    import torch

    held = torch.empty(mib * 2**20, dtype=torch.uint8, device="cuda")  # noqa: F841 (memory a neighbour holds)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    busy, loops, start = 0.0, 0, time.monotonic()
    while time.monotonic() < stop_at and not stop.is_set():
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.1 * duty:
            for _ in range(queue):
                a = (a @ a).clamp_(-1, 1)
            torch.cuda.synchronize()
            loops += queue
        busy += time.monotonic() - t0
        time.sleep(max(0.0, 0.1 - (time.monotonic() - t0)))
    print(f"busy_box: the GPU neighbour ran {loops} matmuls, busy {busy / (time.monotonic() - start):.0%} of the time",
          flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", type=int, default=0, help="cores to keep spinning")
    parser.add_argument("--gpu-duty", type=float, default=0.0, help="share of time the GPU neighbour computes (0-1)")
    parser.add_argument("--gpu-mib", type=int, default=4096, help="GPU memory the neighbour holds (MiB)")
    parser.add_argument("--gpu-queue", type=int, default=1, help="matmuls the neighbour launches before each wait")
    parser.add_argument("--seconds", type=float, default=3600.0)
    args = parser.parse_args()
    stop_at = time.monotonic() + args.seconds
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    procs = [ctx.Process(target=spin, daemon=True) for _ in range(args.cpu)]
    if args.gpu_duty > 0:
        procs.append(ctx.Process(target=gpu_neighbour, args=(args.gpu_duty, args.gpu_mib, args.gpu_queue, stop_at, stop), daemon=True))
    for p in procs:
        p.start()
    print(f"busy_box: {args.cpu} cores spinning, a GPU neighbour {args.gpu_duty:.0%} busy with {args.gpu_mib} MiB"
          f" ({args.gpu_queue} matmul(s) queued at a time)", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while time.monotonic() < stop_at:
            time.sleep(1.0)
    finally:
        stop.set()
        for p in procs[: args.cpu]:
            p.terminate()
        for p in procs[args.cpu:]:
            p.join(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
