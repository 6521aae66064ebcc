"""Times measured while the host was busy beyond the watched program are marked (issue 36, item 7: live watch showed
``forward 7.53 ms`` for calls the program timed at 13-23 µs while the machine was busy, with no flag)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sdpa_tui.core.calls.call_signature import CallSignature
from sdpa_tui.core.calls.watch_report import build_report
from sdpa_tui.core.calls.watched_calls import CallStats, ProcessState
from sdpa_tui.telemetry.host_busy import HostBusy
from sdpa_tui.watch.states.contention import ContendedCalls

TICKS = os.sysconf("SC_CLK_TCK")
PROGRAM = 4242


class FakeProc:
    """MADE-UP /proc: the CPUs' busy ticks, the PSI stall total, the program's own ticks; a clock set by hand."""

    def __init__(self, root: Path) -> None:
        self.root, self.t = root, 100.0
        (root / str(PROGRAM)).mkdir()
        self.set(busy=0, waited_us=0, program=0)

    def set(self, busy: int, waited_us: int, program: int) -> None:
        (self.root / "stat").write_text(f"cpu  {busy} 0 0 5000 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n")
        (self.root / "psi").write_text(f"some avg10=0.00 avg60=0.00 avg300=0.00 total={waited_us}\n"
                                       "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
        (self.root / str(PROGRAM) / "stat").write_text(
            f"{PROGRAM} (python3 (a) b) R 1 1 1 0 -1 0 0 0 0 0 {program} 0 0 0 20 0 4 0\n")

    def host(self) -> HostBusy:
        return HostBusy(proc=str(self.root), psi=str(self.root / "psi"), clock=lambda: self.t)


@pytest.fixture
def proc(tmp_path) -> FakeProc:
    return FakeProc(tmp_path)


def test_the_host_is_busy_beyond_the_program_only_while_others_use_the_cpus_and_tasks_wait(proc):
    host = proc.host()
    assert host.read([PROGRAM]) is None, "the first read starts an interval"
    # one second: the program used 1.8 cores, tasks waited 40% of it, nobody else ran: its own doing
    proc.t += 1.0
    proc.set(busy=int(1.8 * TICKS), waited_us=400_000, program=int(1.8 * TICKS))
    own = host.read([PROGRAM])
    assert own.waited_pct == pytest.approx(40.0) and own.others_cores == pytest.approx(0.0, abs=0.02)
    assert not own.busy and own.note() == ""
    # the next second: another process took a core, tasks waited 45%
    proc.t += 1.0
    proc.set(busy=int(3.6 * TICKS), waited_us=850_000, program=int(2.6 * TICKS))
    other = host.read([PROGRAM])
    assert other.busy and other.others_cores == pytest.approx(1.0, abs=0.02)
    assert other.note() == ("the CPUs were busy beyond the program (tasks waited for a core 45% of the time, "
                            "other processes used 1.0 cores)")
    assert other.short() == "tasks waited 45%, others used 1.0 cores"
    # others ran but nothing waited: a host with cores to spare
    proc.t += 1.0
    proc.set(busy=int(5.6 * TICKS), waited_us=860_000, program=int(3.6 * TICKS))
    assert not host.read([PROGRAM]).busy


def test_calls_made_while_busy_are_counted_per_signature_and_marked_in_the_report(proc):
    signature = CallSignature((1, 4, 64, 32), (1, 4, 64, 32), "torch.float32", "cpu")
    ledger = ContendedCalls(proc.host(), clock=lambda: proc.t)

    def arrive(count: int) -> ProcessState:
        state = ProcessState(pid=PROGRAM, calls=[CallStats(signature, count=count, backend="FLASH_ATTENTION",
                                                            host_us=[7530.0])])
        ledger.note(state, [PROGRAM])
        return state

    arrive(10)  # quiet start
    proc.t += 1.0
    proc.set(busy=int(1.0 * TICKS), waited_us=50_000, program=int(1.0 * TICKS))
    quiet = arrive(30)
    assert quiet.calls[0].contended_calls == 0 and ledger.now == ""
    proc.t += 1.0
    proc.set(busy=int(3.0 * TICKS), waited_us=550_000, program=int(1.5 * TICKS))
    busy = arrive(70)
    assert busy.calls[0].contended_calls == 40 and ledger.now == "tasks waited 50%, others used 1.5 cores"
    assert "the CPUs were busy beyond the program (tasks waited for a core 50%" in ledger.seen
    report = build_report(["python", "p.py"], 0, [busy], 2.0)
    (row,) = report.rows
    assert row.contended and row.time_mark == "*"
    assert row.report_dict()["contended_calls"] == 40 and row.report_dict()["contended"] is True
    quiet_row = build_report(["python", "p.py"], 0, [quiet], 2.0).rows[0]
    assert not quiet_row.contended and quiet_row.time_mark == ""
