"""Threads, a DataLoader with workers, multiprocessing (fork and spawn) and os.fork, around SDPA calls."""

import multiprocessing as mp
import os
import sys
import threading

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.set_num_threads(1)  # forking after OpenMP ran in parallel hangs the children, watched or not


def attend(seed: int) -> float:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, 2, 8, 16, generator=g)
    return float(F.scaled_dot_product_attention(q, q, q).sum())


def main() -> None:
    results = {}
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, attend(i))) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    loader = DataLoader(TensorDataset(torch.randn(16, 2, 8, 16)), batch_size=4, num_workers=2)
    batches = [float(F.scaled_dot_product_attention(x, x, x).sum()) for (x,) in loader]
    with mp.get_context("fork").Pool(2) as pool:
        forked = pool.map(attend, [10, 11])
    with mp.get_context("spawn").Pool(1) as pool:
        spawned = pool.map(attend, [20])
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, repr(attend(30)).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    from_fork = float(os.read(read, 100))
    expected = [attend(i) for i in range(4)] + [attend(10), attend(11), attend(20), attend(30)]
    got = [results[i] for i in range(4)] + forked + spawned + [from_fork]
    assert got == expected, (got, expected)
    print(f"ok threads={len(results)} batches={len(batches)} pool={len(forked) + len(spawned)} fork=1")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
