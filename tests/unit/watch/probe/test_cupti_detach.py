"""When watch lets Kineto detach CUPTI after a window, that no window starts while a teardown may be under way, and
that a window spent on first calls is followed at once."""

from __future__ import annotations

import os

import pytest

from sdpa_tui.watch.probe.kernels import bursts, cupti_detach
from sdpa_tui.watch.probe.kernels.cupti_detach import DETACH_AFTER_S, ENV, OURS, CuptiDetach


@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.delenv(OURS, raising=False)
    yield
    os.environ.pop(ENV, None)
    os.environ.pop(OURS, None)


def test_detached_only_when_no_window_is_due_soon_and_never_after_the_last(clean_env):
    policy = CuptiDetach()
    assert not policy.before_stop(DETACH_AFTER_S / 2), "the schedule's next window is near: CUPTI stays"
    assert ENV not in os.environ
    assert policy.before_stop(DETACH_AFTER_S * 2)
    assert os.environ[ENV] == "1", "Kineto reads the variable when the trace stops"
    assert policy.guarding(policy.detached_at)
    assert not policy.before_stop(DETACH_AFTER_S / 2)
    assert ENV not in os.environ, "a stop with a window due soon leaves CUPTI attached"
    assert not policy.before_stop(DETACH_AFTER_S * 2, final=True), "no teardown thread is left waiting at exit"
    assert not policy.before_stop(DETACH_AFTER_S * 2, wanted_soon=True), "coverage windows follow closely"
    assert ENV not in os.environ


def test_a_start_says_1_only_where_the_last_stop_detached_cupti(clean_env):
    """Kineto reads the variable at a start twice: to re-attach the callbacks a teardown removed (only if ``1``), and,
    resetting the last trace, to tear CUPTI down if it is attached (if ``1``). A start after a stop that kept CUPTI
    attached must not say ``1``: on an H200 the window after a follow-up window (a detach before it) recorded its
    16 calls' CPU side and no GPU work at all."""
    policy = CuptiDetach()
    policy.before_start()
    assert ENV not in os.environ, "the first start: nothing to re-attach"
    assert policy.before_stop(DETACH_AFTER_S * 2)
    policy.before_start()
    assert os.environ[ENV] == "1", "CUPTI was detached: the start re-attaches it"
    assert not policy.before_stop(DETACH_AFTER_S * 2, wanted_soon=True)
    policy.before_start()
    assert ENV not in os.environ, "CUPTI still attached: a start saying 1 would tear it down inside the window"
    assert policy.before_stop(DETACH_AFTER_S * 2)
    policy.before_start()
    assert os.environ[ENV] == "1"


@pytest.mark.parametrize("value, detaches", [("1", True), ("0", False)])
def test_the_users_own_setting_is_obeyed_and_left_alone(clean_env, monkeypatch, value, detaches):
    monkeypatch.setenv(ENV, value)
    policy = CuptiDetach()
    assert policy.before_stop(DETACH_AFTER_S / 2) is detaches
    assert policy.before_stop(DETACH_AFTER_S * 2) is detaches
    policy.before_start()
    assert os.environ[ENV] == value


def test_a_child_that_inherits_watchs_setting_does_not_take_it_for_the_users(clean_env):
    CuptiDetach().before_stop(DETACH_AFTER_S * 2)
    child = CuptiDetach()  # a process started while the variable was set by watch
    assert child.user_value is None
    assert not child.before_stop(DETACH_AFTER_S / 2)


def test_no_window_starts_while_a_teardown_may_be_under_way(clean_env, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(cupti_detach.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(bursts.time, "monotonic", lambda: clock[0])
    windows = bursts.KernelBursts()
    windows.arm()
    windows._ended = clock[0] - 60  # the last window ended long ago
    windows.cupti.detached_at = clock[0]  # ... but the stop just now detached CUPTI
    windows.signature_seen()
    assert not windows.due and not windows.coverage_open(), "a new signature waits for the teardown"
    windows._origin = clock[0] - bursts.SCHEDULE_S[0]
    assert not windows.poll(), "so does the schedule's window"
    clock[0] += cupti_detach.GUARD_S
    assert windows.coverage_open() and windows.poll()


def test_a_window_due_from_before_a_detaching_stop_waits_for_the_guard(clean_env, monkeypatch):
    """The schedule's window can fall due while another is starting (its first start attaches CUPTI, seconds on
    the H100): when that one stops and detaches, the due window must still wait."""
    clock = [1000.0]
    monkeypatch.setattr(cupti_detach.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(bursts.time, "monotonic", lambda: clock[0])
    windows = bursts.KernelBursts()
    windows.due = True
    windows.cupti.detached_at = clock[0]
    windows.start()
    assert not windows.active and windows.due, "not started, still due"
    clock[0] += cupti_detach.GUARD_S
    windows.start()
    assert windows.active and not windows.due
    windows.stop()


def test_a_window_spent_on_first_calls_is_followed_at_once(clean_env):
    """H100: a short program's first window went to five first calls (3 s of plans built), and its remaining
    calls ran within the quick gap, so no signature got a sample."""
    windows = bursts.KernelBursts()
    windows.due = True
    windows.start()
    windows.stop(wanted_left=True, sampled=0)
    windows.cover(never_profiled=False)
    assert windows.due, "no gap after a window that sampled nothing"
    windows.start()
    windows.stop(wanted_left=True, sampled=bursts.MIN_BURST_CALLS)
    windows.cover(never_profiled=False)
    assert not windows.due, "a window that sampled enough is followed after the usual gap"


def test_kinetos_lines_at_a_profiler_start_stay_out_of_the_programs_stderr_and_its_own_lines_do_not(capfd):
    """On a machine without a GPU driver Kineto wrote ``gpuGetDeviceCount failed`` into a watched program's output
    once a compiled graph had run: the program's own lines must pass, the profiler's must not."""
    import os

    said = bursts.quiet_fd2(lambda: os.write(2, b"ERROR:2026-11-27 04:55:57 1453:1453 DeviceProperties.cpp:56] "
                                               b"gpuGetDeviceCount failed with code 35\nthe program's own line\n"))
    assert capfd.readouterr().err == "the program's own line\n"
    assert len(said) == 1 and "gpuGetDeviceCount" in said[0]
