"""The engine's numbers beside the clocks: each backend's output against a float64 reference, and the matmul
peak of the workload's dtype (once per dtype per engine, after every backend's first burst)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..core.backends import Backend
from ..core.engine_commands import Configure
from ..core.records import Accuracy, PeakFlops
from . import quality
from .calls import Inputs, forced
from .channel import Channel
from .run_state import BackendRun
from .startup_times import StartupClock


class AccuracyAndPeaks:
    """Mixin of :class:`runner.Engine`: the attributes and methods below are the engine's."""

    channel: Channel
    startup: StartupClock
    device: torch.device
    config: Configure | None
    inputs: Inputs | None
    runs: dict[Backend, BackendRun]
    _peaks: dict[str, float]
    _peak_due: bool

    _check_sticky: Callable[[BaseException], None]  # BackendRuns's
    _free_memory: Callable[[], None]  # BackendRuns's

    def _send_accuracies(self, backends: list[Backend]) -> None:
        if backends:
            reference = self._reference()
            for backend in backends:
                if backend in self.runs:  # a backend that failed meanwhile has none
                    self._send_accuracy(backend, reference)
            del reference
        self.startup.mark("accuracy")

    def _send_peak_when_due(self) -> None:
        """The matmul peak once every backend had its first burst: full panels come first
        (on a CPU the peak's matmuls took over a second, as long as a first burst)."""
        if self._peak_due and all(r.captured for r in self.runs.values()) and not self.channel.poll(0):
            self._peak_due = False
            self._send_peak(self.config.workload.dtype)

    def _send_peak(self, dtype: str) -> None:
        """Measure the matmul ceiling once per dtype per engine."""
        if dtype in self._peaks:
            return
        try:
            tflops, detail = quality.matmul_peak_tflops(dtype, self.device)
        except (RuntimeError, torch.OutOfMemoryError) as exc:
            self._check_sticky(exc)
            self._free_memory()
            tflops, detail = 0.0, f"not measured: {str(exc).splitlines()[0]}"
        self._peaks[dtype] = tflops
        self.channel.send(PeakFlops(dtype, tflops, detail))

    def _reference(self) -> "torch.Tensor | str":
        """The float64 output to compare against, or why there is none."""
        if self.device.type == "cuda":
            need = self.config.workload.math_bytes_lower_bound * 2  # float64 scores
            if need > torch.cuda.mem_get_info(self.device)[0]:
                return f"the float64 reference would need at least {need / 2**30:.1f} GiB: not computed"
        try:
            return quality.reference_output(self.inputs)
        except torch.OutOfMemoryError:
            self._free_memory()
            return "the float64 reference does not fit in memory"
        except RuntimeError as exc:
            self._check_sticky(exc)
            return f"no float64 reference: {str(exc).splitlines()[0]}"

    def _send_accuracy(self, backend: Backend, reference: "torch.Tensor | str") -> None:
        cid = self.config.config_id
        if isinstance(reference, str):
            self.channel.send(Accuracy(cid, backend, None, None, reference))
            return
        with forced((backend,)), torch.no_grad():
            out = torch.nn.functional.scaled_dot_product_attention(
                self.inputs.q, self.inputs.k, self.inputs.v, **self.inputs.sdpa_kwargs()
            )
        max_abs, max_rel = quality.compare(out, reference)
        del out
        self.channel.send(Accuracy(cid, backend, max_abs, max_rel, "forward output vs float64 MATH"))
