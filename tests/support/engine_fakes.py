"""Stand-ins for what an engine driven by hand (no ``run()`` loop) talks to."""

from __future__ import annotations

from sdpa_tui.core.protocol.records import KernelCapture, KernelInfo
from sdpa_tui.engine.measuring import clocks


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


class InstantProfiler:
    """The engine's profiler client, ready at once: each burst answers with one named op and the time of one call
    (no process, no torch.profiler); ``requests`` lists the backends asked for, in order."""

    pid = None
    starting = False  # ready at once: no start beside the engine's slices

    def __init__(self) -> None:
        self.requests: list[object] = []

    def poll_ready(self) -> bool:
        return True

    def capture(self, request, timeout_s: float):
        self.requests.append(request.backend)
        return KernelCapture(request.config_id, request.backend, (KernelInfo("burst_op", 1.0, "cpu_op"),), (1.0,))

    def read_lines(self) -> list[str]:
        return []

    def reap(self) -> None:
        pass

    def close(self) -> None:
        pass


class EagerGraphClock:
    """``clocks.GraphClock`` where no CUDA graph can be captured (the CPU): ``calls`` calls timed eagerly per
    replay, and one kernel named as a graph's nodes name them."""

    method = "graph"
    capture_error = ""

    def __init__(self, step, device, per_call_us: float) -> None:
        self.step, self.device, self.calls = step, device, 2
        self.kernels = (KernelInfo("graph_node_kernel", 0.0),)

    def sample(self, replays: int = 1) -> float:
        return clocks.eager_us(self.step, self.device, replays * self.calls)

    def release(self) -> None:
        pass
