"""SDPA calls, a child process, then waiting forever: stopped by SIGINT in the test."""

import multiprocessing as mp
import sys
import time

import torch
import torch.nn.functional as F


def wait_forever() -> None:
    while True:
        time.sleep(1)


if __name__ == "__main__":
    q = torch.randn(1, 2, 8, 16)
    F.scaled_dot_product_attention(q, q, q)
    child = mp.get_context("fork").Process(target=wait_forever)
    child.start()
    print(f"child {child.pid}", flush=True)
    print("ready", flush=True)
    sys.stdout.flush()
    wait_forever()
