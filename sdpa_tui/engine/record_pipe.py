"""Records over a multiprocessing pipe, as JSON bytes (never pickles)."""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any

from ..core.protocol.wire_format import decode, encode


class ChannelClosed(Exception):
    """The other end of the pipe is gone."""


class Channel:
    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def send(self, record: Any) -> None:
        try:
            self.conn.send_bytes(encode(record))
        except (BrokenPipeError, ConnectionResetError, EOFError, OSError) as exc:
            raise ChannelClosed(str(exc)) from exc

    def poll(self, timeout: float = 0.0) -> bool:
        try:
            return self.conn.poll(timeout)
        except (BrokenPipeError, ConnectionResetError, EOFError, OSError) as exc:
            raise ChannelClosed(str(exc)) from exc

    def receive(self) -> Any:
        try:
            return decode(self.conn.recv_bytes())
        except (BrokenPipeError, ConnectionResetError, EOFError, OSError) as exc:
            raise ChannelClosed(str(exc)) from exc

    def receive_all(self, timeout: float = 0.0) -> list[Any]:
        """Every record waiting now (waiting up to ``timeout`` for the first)."""
        records: list[Any] = []
        wait = timeout
        try:
            while self.poll(wait):
                records.append(self.receive())
                wait = 0.0
        except ChannelClosed:
            if not records:
                raise
            # The peer sent these, then went away: deliver them (its last words are
            # usually why it died); the next call reports the closed channel.
        return records

    def close(self) -> None:
        self.conn.close()
