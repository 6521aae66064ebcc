"""The checks' kernels are warmed once the program has made its CUDA context and before its first SDPA call, on the
one device with a context, and never where the program calls SDPA first or several devices have a context. On a
machine without a GPU the context is a fake (``context_device``) and the checks are counted, not run; on a GPU,
``tests/gpu/test_watch_cuda.py`` runs them."""

from __future__ import annotations

import threading

import pytest

from sdpa_tui.watch.probe.checks import kernel_warm_up
from sdpa_tui.watch.probe.checks.kernel_warm_up import KernelWarmUp


class Program:
    """What the warm-up looks at: the process's context (None, a device, -1 for several) and its calls so far."""

    def __init__(self) -> None:
        self.context: int | None = None
        self.calls = 0
        self.looked = threading.Event()  # the thread has looked for the context at least once
        self.warmed_on: list[int] = []
        self.relaxable = True  # can the driver put the warm-up's thread in the relaxed capture mode?
        self.relaxed: list[threading.Thread] = []  # the threads it was asked for, in order

    def context_device(self) -> int | None:
        self.looked.set()
        return self.context

    def relax_capture_mode(self) -> bool:
        self.relaxed.append(threading.current_thread())
        return self.relaxable

    def run_checks_once(self, device: int, go_on) -> int:
        assert self.relaxed and self.relaxed[-1] is threading.current_thread(), "checks run before the relaxed mode"
        self.warmed_on.append(device)
        return 6 if go_on() else 0


@pytest.fixture
def program(monkeypatch):
    program = Program()
    monkeypatch.setattr(kernel_warm_up.torch.version, "cuda", "13.0")  # a CUDA build, as on a GPU machine
    monkeypatch.setattr(kernel_warm_up, "context_device", program.context_device)
    monkeypatch.setattr(kernel_warm_up, "run_checks_once", program.run_checks_once)
    monkeypatch.setattr(kernel_warm_up, "relax_capture_mode", program.relax_capture_mode)
    monkeypatch.setattr(kernel_warm_up, "POLL_S", 0.005)
    return program


def started(program: Program) -> KernelWarmUp:
    warm = KernelWarmUp(lambda: program.calls > 0)
    warm.start()
    assert program.looked.wait(10.0), "the warm-up never looked for a context"
    return warm


def test_the_checks_are_warmed_once_on_the_device_whose_context_the_program_made(program):
    warm = started(program)
    assert not warm.done.is_set() and not program.warmed_on  # no context yet: it waits
    program.context = 1
    assert warm.done.wait(10.0)
    assert program.warmed_on == [1] and warm.warmed == 6


def test_the_warm_up_relaxes_its_own_threads_capture_mode_first_and_warms_nothing_where_it_cannot(program, monkeypatch):
    """A program capturing a CUDA graph in the global mode while the warm-up allocates would have its capture broken:
    the warm-up's thread, and only it, is put in the relaxed mode before any check; where the driver cannot, nothing
    runs."""
    program.context = 0
    warm = started(program)
    assert warm.done.wait(10.0)
    assert program.warmed_on == [0] and program.relaxed == [warm._thread]
    assert warm._thread is not threading.main_thread()
    refused = Program()
    refused.context, refused.relaxable = 0, False
    for name in ("context_device", "run_checks_once", "relax_capture_mode"):
        monkeypatch.setattr(kernel_warm_up, name, getattr(refused, name))
    warm = KernelWarmUp(lambda: False)
    warm.start()
    assert warm.done.wait(10.0)
    assert refused.relaxed and refused.warmed_on == [] and warm.warmed == 0


def test_without_the_drivers_library_in_the_process_the_mode_is_not_relaxed(monkeypatch):
    def not_loaded(name, mode=0):
        assert mode & kernel_warm_up.os.RTLD_NOLOAD, "the driver's library would be loaded by the warm-up"
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(kernel_warm_up.ctypes, "CDLL", not_loaded)
    assert kernel_warm_up.relax_capture_mode() is False


def test_nothing_is_warmed_where_the_program_calls_sdpa_before_its_context_is_seen(program):
    warm = started(program)
    program.calls = 1
    assert warm.done.wait(10.0)
    program.context = 0
    assert program.warmed_on == [] and warm.warmed == 0


def test_nothing_is_warmed_where_several_devices_have_a_context(program):
    program.context = -1
    warm = started(program)
    assert warm.done.wait(10.0)
    assert program.warmed_on == []


def test_stopping_ends_the_wait_and_a_torch_without_cuda_starts_no_thread(program, monkeypatch):
    warm = started(program)
    warm.stop()
    assert warm.done.wait(10.0) and program.warmed_on == []
    monkeypatch.setattr(kernel_warm_up.torch.version, "cuda", None)
    cpu_only = KernelWarmUp(lambda: False)
    cpu_only.start()
    assert cpu_only.done.is_set() and cpu_only._thread is None


def test_a_failing_warm_up_ends_quietly(program, monkeypatch):
    def fails(device, go_on):
        raise RuntimeError("CUDA error: out of memory")

    monkeypatch.setattr(kernel_warm_up, "run_checks_once", fails)
    program.context = 0
    warm = started(program)
    assert warm.done.wait(10.0) and warm.warmed == 0


def test_a_forked_child_never_waits_at_its_end_for_the_parents_warm_up_thread():
    """A fork copies the probe but not its threads: a warm-up under way in the parent would never finish in the
    child, whose end would wait for it."""
    from sdpa_tui.watch.probe.slow_path import Probe

    probe = Probe(None)
    probe.warm_up = KernelWarmUp(lambda: False)  # the parent's, under way
    probe.warm_up.stop = lambda wait_s=0.0: wait_s and pytest.fail("the child waited for its parent's warm-up")
    probe.after_fork_in_child()
    probe.finish()
    assert probe.warm_up is None
