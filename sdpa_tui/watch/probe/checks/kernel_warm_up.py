"""The checks' GPU kernels loaded before the program's first SDPA call, while its host is busy elsewhere.

On a GPU each kind of op new to a process loads its kernels the first time it runs: 30 to 120 ms an op on an
H200, during which the program's own launches wait, whichever thread loads them (``diag_check_warmup.py``: a check
warmed on a thread beside the training steps slowed them by what it saved). The checks' first run (the forward
check, the gradient comparison, the backward sentinel's counts) is float64 and elementwise ops a bf16 training step
has not run: about 0.2 s, paid on the program's thread at the step after a signature's first window
(``docs/lab-notes/watch-truth.md``).

A training program's start-up spends seconds on its host after it has made its CUDA context and before its first
step: building the optimizer imports ``torch._dynamo`` (3.5 s on an H200), loading data, compiling. So a thread of
the probe's waits for the process's context and, before any SDPA call, runs the three checks once on tiny tensors
on a stream of its own: the loads happen while the program's thread runs Python, and its first checks then run
warm. Nothing of the program's is read or changed; the results are thrown away. Its thread is put in CUDA's
relaxed stream-capture mode first: a program that captures a CUDA graph meanwhile (``torch.cuda.graph`` captures in
the global mode) would otherwise have its capture broken by the warm-up's allocations.

It gives up, warming nothing, where the program calls SDPA or ``torch.compile`` first (the checks then load their
kernels at their first run, as before; a compiled program may capture CUDA graphs, which another thread's
allocations would break), where more than one device has a context (which one the calls will use is not known),
where its thread cannot be put in the relaxed capture mode, or on a torch built without CUDA; a forked child
inherits no thread and warms nothing. Between its ops it looks again, so a program that starts its calls meanwhile
is held up by at most one op's load.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable

import torch

from ....core.calls.watched_calls import OutputCheck
from ..thread_signals import leave_signals_to_the_program
from . import gradient_reference, output_check
from .gradient_sentinel import CallTensors, nonfinite_counts

POLL_S = 0.05
"""How often the thread looks for the program's CUDA context (a Python flag read: nothing of CUDA is called)."""
SHAPE = (1, 2, 16, 8)
"""The tiny call the checks run on: a batch element, two heads, 16 rows, head dim 8."""
CAPTURE_MODE_RELAXED = 2
"""The driver's ``CU_STREAM_CAPTURE_MODE_RELAXED``."""


def context_device() -> int | None:
    """The one CUDA device with a context in this process; None while there is none; -1 where there are several."""
    if not torch.cuda.is_initialized():
        return None
    found = [i for i in range(torch.cuda.device_count()) if torch._C._cuda_hasPrimaryContext(i)]
    if not found:
        return None
    return found[0] if len(found) == 1 else -1


def relax_capture_mode() -> bool:
    """Put the calling thread in CUDA's relaxed stream-capture mode (``cuThreadExchangeStreamCaptureMode``).

    While a thread captures a CUDA graph in the global mode (``torch.cuda.graph``'s default), an allocation or a
    synchronisation by any other thread in the default mode fails and invalidates that capture: the warm-up, running
    while the program captures, would break the program's graph. A relaxed thread's calls are allowed and leave the
    capture alone. False where the driver's library is not loaded in the process or refuses: nothing is warmed then."""
    try:
        driver = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)  # the process's own, never loaded here
        mode = ctypes.c_int(CAPTURE_MODE_RELAXED)
        return driver.cuThreadExchangeStreamCaptureMode(ctypes.byref(mode)) == 0
    except (OSError, AttributeError):  # no driver library loaded, or no such call in it (or not Linux)
        return False


def run_checks_once(device: int, go_on: Callable[[], bool] = lambda: True) -> int:
    """The forward check, the gradient comparison and the sentinel's counts, on a causal call and on one with a
    boolean mask (what each path runs beyond the other), on tiny bf16 tensors of ``device``, on a stream of their
    own; ``go_on`` is asked before each: False stops. How many of the six ran."""
    ran = 0
    stream = torch.cuda.Stream(device)
    with torch.cuda.device(device), torch.cuda.stream(stream), torch.no_grad():
        q = torch.full(SHAPE, 0.5, dtype=torch.bfloat16, device=device)
        mask = torch.ones(SHAPE[-2], SHAPE[-2], dtype=torch.bool, device=device).tril_()
        for call_mask, causal in ((None, True), (mask, False)):
            if not go_on():
                return ran
            for _ in _checks(q, call_mask, causal):
                ran += 1
                if not go_on():
                    return ran
        stream.synchronize()
    return ran


def _checks(q: torch.Tensor, mask: torch.Tensor | None, causal: bool):
    """The three checks on ``q`` as query, key, value, output and every gradient; one yield after each."""
    output_check.check_output(OutputCheck(), q, q, q, q, mask, 0.0, causal, None, False)
    yield
    tensors = CallTensors(q, q, q, mask, 0.0, causal, None, False, grad_out=q, grads=(q, q, q))
    gradient_reference.errors_against(tensors.grads, gradient_reference.reference(tensors))
    yield
    torch.empty(7, dtype=torch.int64, pin_memory=True).copy_(nonfinite_counts(tensors))
    yield


class KernelWarmUp:
    """The thread that waits for the context and warms the checks once (``start``; ``stop`` ends it early)."""

    def __init__(self, calls_seen: Callable[[], bool]) -> None:
        self.calls_seen = calls_seen  # has the program called SDPA or torch.compile?
        self.warmed = 0  # checks run (a test and the diagnostics read it)
        self.done = threading.Event()  # the thread has finished, warmed or not
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if torch.version.cuda is None:  # a torch without CUDA never makes a context
            self.done.set()
            return
        self._thread = threading.Thread(target=self._run, name="sdpa-tui-warm-up", daemon=True)
        self._thread.start()

    def stop(self, wait_s: float = 0.0) -> None:
        """End the thread's wait; with ``wait_s``, wait that long for it to end (not left loading kernels while
        the interpreter ends, nor running past a block of the Python API)."""
        self._stop.set()
        thread = self._thread
        if wait_s and thread is not None and thread is not threading.current_thread():
            thread.join(wait_s)

    def _go_on(self) -> bool:
        return not self._stop.is_set() and not self.calls_seen()

    def _run(self) -> None:
        leave_signals_to_the_program()
        try:
            while self._go_on():
                device = context_device()
                if device == -1:
                    return
                if device is not None:
                    if relax_capture_mode():
                        self.warmed = run_checks_once(device, self._go_on)
                    return
                self._stop.wait(POLL_S)
        except Exception:  # noqa: BLE001 - the warm-up is an optimisation: the checks load their kernels themselves
            pass
        finally:
            self.done.set()
