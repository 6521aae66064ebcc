"""The engine's numbers beside the clocks: each backend's output against a float64 reference, and the matmul
peak of the workload's dtype (once per dtype per engine, after every backend's first burst)."""

from __future__ import annotations

import torch

from ...core.backends import Backend
from ...core.protocol.records import Accuracy, PeakFlops
from ..measuring import quality
from ..measuring.sdpa_call import forced
from .backend_runs import BackendRuns


class AccuracyAndPeaks(BackendRuns):
    """Mixin of :class:`runner.Engine`: the attributes below are the engine's (the common ones declared in
    :class:`BackendRuns`)."""

    _peaks: dict[str, float]
    _peak_due: bool
    _accuracy_due: list[Backend]
    _grad_ref: "tuple[int, tuple[torch.Tensor, ...] | str] | None"  # the float64 gradients of one configuration

    def _send_accuracies_when_due(self) -> None:
        """The accuracy of the backends a configuration set up, once every graph is captured: the kernels' names
        do not wait for the float64 reference (0.08-0.16 s at the default workload on an H100, more at long
        sequences). On the CPU, with no graphs, right after the first numbers."""
        if self._accuracy_due and not any(r.graph_due for r in self.runs.values()):
            backends, self._accuracy_due = self._accuracy_due, []
            self._send_accuracies(backends)

    def _send_accuracies(self, backends: list[Backend]) -> None:
        if backends:
            reference = self._reference()
            for backend in backends:
                if backend in self.runs:  # a backend that failed meanwhile has none
                    self._send_accuracy(backend, reference)
            del reference
            self._grad_ref = None  # the float64 gradients are held for one configuration's backends only
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
        inputs = self.inputs
        with forced((backend,)), torch.no_grad():
            out = torch.nn.functional.scaled_dot_product_attention(inputs.q, inputs.k, inputs.v, **inputs.sdpa_kwargs())
        max_abs, max_rel = quality.compare(out, reference)
        bad = quality.nonfinite({"out": out})
        del out
        grads, grad_abs, grad_rel, note = self._grad_errors(backend)
        if grads:
            bad += quality.nonfinite(dict(zip(quality.GRADS, grads)))
        del grads
        self.channel.send(Accuracy(cid, backend, max_abs, max_rel, "forward output vs float64 MATH" + note,
                                   grad_abs, grad_rel, bad))

    def _grad_errors(self, backend: Backend) -> tuple[tuple, tuple | None, tuple | None, str]:
        """fwd+bwd workloads: this backend's dq, dk, dv and their errors against float64 MATH's (the reference is
        computed once per configuration, in ``_grad_reference``)."""
        inputs = self.inputs
        if not self.config.workload.backward or inputs.grad_out is None:
            return (), None, None, ""
        reference = self._grad_reference()
        if isinstance(reference, str):
            return (), None, None, f"; gradients: {reference}"
        try:
            with forced((backend,)), torch.enable_grad():
                out = torch.nn.functional.scaled_dot_product_attention(inputs.q, inputs.k, inputs.v,
                                                                       **inputs.sdpa_kwargs())
                grads = torch.autograd.grad(out, (inputs.q, inputs.k, inputs.v), inputs.grad_out)
        except RuntimeError as exc:
            self._check_sticky(exc)
            return (), None, None, f"; gradients: {str(exc).splitlines()[0]}"
        errors = [quality.compare(g, r) for g, r in zip(grads, reference)]
        return (grads, tuple(e[0] for e in errors), tuple(e[1] for e in errors),
                "; dq, dk, dv vs float64 MATH's")

    def _grad_reference(self) -> "tuple[torch.Tensor, ...] | str":
        cached = self._grad_ref
        if cached is not None and cached[0] == self.config.config_id:
            return cached[1]
        if self.device.type == "cuda":
            need = self.config.workload.math_bytes_lower_bound * 4  # float64 scores, and their gradient
            if need > torch.cuda.mem_get_info(self.device)[0]:
                found: "tuple[torch.Tensor, ...] | str" = (
                    f"the float64 reference would need at least {need / 2**30:.1f} GiB: not computed")
                self._grad_ref = (self.config.config_id, found)
                return found
        try:
            found = quality.reference_grads(self.inputs)
        except torch.OutOfMemoryError:
            self._free_memory()
            found = "the float64 reference does not fit in memory"
        except RuntimeError as exc:
            self._check_sticky(exc)
            found = f"no float64 reference: {str(exc).splitlines()[0]}"
        self._grad_ref = (self.config.config_id, found)
        return found
