"""Read what a program has added to its log file since the last look, without ever blocking long."""

from __future__ import annotations

import codecs
import os

MAX_READ = 256 * 1024
"""At most this much per look; a program writing faster has its older output skipped (the file keeps it)."""


class LogTail:
    def __init__(self, path: str) -> None:
        self.path = path
        self._offset = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def read_new(self) -> str:
        """The text added since the last call ('' when none, or the file is not there yet)."""
        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < self._offset:  # truncated or replaced: start again
                    self._offset = 0
                if size - self._offset > MAX_READ:
                    self._offset = size - MAX_READ
                    self._decoder.reset()
                f.seek(self._offset)
                data = f.read(size - self._offset)
        except OSError:
            return ""
        self._offset += len(data)
        return self._decoder.decode(data)
