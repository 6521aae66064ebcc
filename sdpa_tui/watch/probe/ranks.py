"""Which rank of a distributed job this process is: torchrun's RANK / LOCAL_RANK, else torch.distributed's
own once the process group is up (``torch.multiprocessing.spawn`` sets no RANK). Kept once known, so a
rank that destroys its process group before the end still reports as itself."""

from __future__ import annotations

import os
import socket
import sys


class RankInfo:
    def __init__(self) -> None:
        self.rank = _env_int("RANK")
        self.local_rank = _env_int("LOCAL_RANK")
        self.host = socket.gethostname()

    def refresh(self) -> None:
        if self.rank is not None:
            return
        dist = sys.modules.get("torch.distributed")  # never imported here: only read if the program did
        try:
            if dist is not None and dist.is_available() and dist.is_initialized():
                self.rank = int(dist.get_rank())
        except Exception:  # noqa: BLE001 - a process group being torn down: try again at the next send
            pass


def _env_int(name: str) -> int | None:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return None
