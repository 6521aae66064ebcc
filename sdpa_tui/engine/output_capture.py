"""Capture the engine process's file descriptors 1 and 2.

PyTorch's C++ side (c10 warnings, Kineto and CUPTI) writes straight to fd 2; inside a
full-screen terminal app those bytes would corrupt the screen. The engine points fd 1 and
fd 2 at an unlinked append-only file before torch is imported, and reads complete lines
back between measurements (no reader thread: a thread would disturb host timing).
"""

from __future__ import annotations

import os
import sys
import tempfile

_TRUNCATE_AT = 1 << 20


class OutputCapture:
    def __init__(self) -> None:
        fd, path = tempfile.mkstemp(prefix="sdpa-tui-engine-", suffix=".log")
        os.close(fd)
        self._fd = os.open(path, os.O_RDWR | os.O_APPEND)
        os.unlink(path)
        self._offset = 0
        self._partial = b""

    def start(self) -> None:
        """From now on, everything written to fd 1 and fd 2 lands in the capture file."""
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        os.dup2(self._fd, 1)
        os.dup2(self._fd, 2)

    def fileno(self) -> int:
        """The capture file, for a child process to write its fd 1 and fd 2 into."""
        return self._fd

    def read_lines(self) -> list[str]:
        """Complete lines written since the last call, decoded, blank ones dropped."""
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
        size = os.fstat(self._fd).st_size
        if size <= self._offset:
            return []
        data = self._partial + os.pread(self._fd, size - self._offset, self._offset)
        self._offset = size
        *lines, self._partial = data.split(b"\n")
        if self._offset >= _TRUNCATE_AT and not self._partial:
            os.ftruncate(self._fd, 0)  # O_APPEND: the next write goes to the new end
            self._offset = 0
        return [text for line in lines if (text := line.decode(errors="replace").rstrip())]
