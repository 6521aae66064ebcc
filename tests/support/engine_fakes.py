"""Stand-ins for what an engine driven by hand (no ``run()`` loop) talks to."""

from __future__ import annotations


class Recorder:
    """The engine's channel: keeps what the engine sent; ``waiting`` is what the UI sent and the
    engine has not read yet."""

    def __init__(self) -> None:
        self.records: list[object] = []
        self.waiting: list[object] = []  # records the UI sent that the engine has not read

    def send(self, record: object) -> None:
        self.records.append(record)

    def poll(self, timeout: float = 0.0) -> bool:
        return bool(self.waiting)


class NoOutput:
    """The engine's captured output: nothing."""

    def read_lines(self) -> list[str]:
        return []
