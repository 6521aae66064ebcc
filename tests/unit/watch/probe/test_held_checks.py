"""A check that falls due while a profiler window records runs once the window has stopped, on the call's own values:
the forward check and the gradient comparison of a signature's first call (which starts its window) are not
profiled with the program's calls, and a tensor the program changes in place meanwhile (a KV cache written at the
next step) makes the check move to the signature's next call instead of comparing against the changed values."""

from __future__ import annotations

import pytest
import torch

from sdpa_tui.watch.probe.checks import output_check
from sdpa_tui.watch.probe.fast_path import make_wrapper
from sdpa_tui.watch.probe.kernels import bursts
from sdpa_tui.watch.probe.slow_path import Probe


class FakeProfiler:
    def __init__(self, **_) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


@pytest.fixture
def probe(monkeypatch):
    """A probe whose windows use a profiler that records nothing, the float64 references it computes counted, with
    the probe's wrapper as ``probe.sdpa``; a window is due at the first call."""
    monkeypatch.setattr("torch.profiler.profile", FakeProfiler)
    monkeypatch.setattr(bursts, "export", lambda profiler: "trace.json")
    monkeypatch.setattr(bursts.KernelBursts, "read_next", lambda self, in_process=False: self.exported.pop(0) and None)
    probe = Probe(None)
    probe.sdpa = make_wrapper(torch.nn.functional.scaled_dot_product_attention, probe)
    probe.references = 0
    reference = output_check.reference

    def counted(*args, **kwargs):
        probe.references += 1
        return reference(*args, **kwargs)

    monkeypatch.setattr(output_check, "reference", counted)
    probe.bursts.due = probe.special = True
    yield probe
    probe.bursts.stop()
    probe._stop.set()


def stop_window(probe: Probe, monkeypatch) -> None:
    """The window's time runs out; the next call stops it."""
    started = probe.bursts._started
    monkeypatch.setattr(bursts.time, "monotonic", lambda: started + bursts.MAX_BURST_S + 1.0)


def test_a_first_calls_checks_run_once_its_window_has_stopped_not_inside_it(probe, monkeypatch):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 32, 16, requires_grad=True) for _ in range(3))
    out = probe.sdpa(q, k, v, is_causal=True)
    assert probe.bursts.active
    (entry,) = probe.entries
    out.sum().backward()
    check, gradients = entry.stats.check, entry.gradients.check
    assert (check.samples, gradients.compared, probe.references) == (0, 0, 0), "nothing float64 inside the window"

    stop_window(probe, monkeypatch)
    probe.sdpa(q, k, v, is_causal=True)
    assert not probe.bursts.active
    assert (check.samples, check.ok) == (1, True)
    assert gradients.compared == 1 and not gradients.out_of_tolerance, gradients
    assert probe.references > 0


def test_a_held_check_whose_input_changed_in_place_checks_the_next_call_instead(probe, monkeypatch):
    """A decode step's keys are a view of a cache the next step writes in place: compared after that write, the
    call's output would read as wrong (a false alarm); the check goes to the next call, which is compared right."""
    torch.manual_seed(0)
    cache = torch.randn(1, 4, 64, 16)
    q = torch.randn(1, 4, 1, 16)
    probe.sdpa(q, cache[:, :, :32], cache[:, :, :32])
    (entry,) = probe.entries
    cache[:, :, :32] += 1.0  # the next step writes the cache

    stop_window(probe, monkeypatch)
    probe.sdpa(q, cache[:, :, :32], cache[:, :, :32])  # stops the window: the held check finds the keys changed
    check = entry.stats.check
    assert check.ok is not False, "a call's output compared with inputs it was not given"
    assert check.samples == 1, "the call after the window was checked in its place"
    assert check.max_rel_error < check.tolerance


def test_a_held_gradient_comparison_whose_inputs_changed_compares_the_next_samples(probe, monkeypatch):
    """q, k and v are parameters the optimizer steps in place before the next call stops the window: compared then,
    the backward's gradients would read as wrong against the new values (a false alarm); the signature's next
    sampled backward is compared instead."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 16, 8, requires_grad=True) for _ in range(3))
    probe.sdpa(q, k, v).pow(2).sum().backward()
    (entry,) = probe.entries
    with torch.no_grad():
        for t in (q, k, v):
            t.add_(t.grad + 1.0)  # the optimizer's step

    stop_window(probe, monkeypatch)
    gradients = entry.gradients.check
    out = probe.sdpa(q, k, v)  # stops the window
    assert gradients.compared == 0 and not gradients.out_of_tolerance, gradients
    out.pow(2).sum().backward()
    assert gradients.compared == 1 and not gradients.out_of_tolerance, gradients


def test_a_call_made_under_inference_mode_is_checked_at_once(probe):
    """Its tensors keep no version counter: no way to know they are unchanged later, so the check runs in the
    window, as every check did before."""
    with torch.inference_mode():
        x = torch.randn(1, 2, 16, 8)
        probe.sdpa(x, x, x)
    assert probe.bursts.active
    assert probe.entries[0].stats.check.samples == 1
