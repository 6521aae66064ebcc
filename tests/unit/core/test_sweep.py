"""``sdpa-tui sweep``: parsing the lengths, the sweep's bookkeeping, the crossovers, the outputs, the real engine.

Two kinds of inputs, labelled where they are built:
- MADE-UP point lists and sessions (round numbers chosen to test the logic; not measurements);
- REAL rows replayed from the H100 reports in ``fixtures/reports/h100-torch2.11``. Those two
  reports are different workloads (``report-small``: [2, 8, 512, 64] fp16; ``report-8k``:
  [1, 16, 8192, 128] bf16 causal), so a "sweep" made of them is not a real sweep: they are
  used only to build realistic SweepPoints (real medians, real peak memory, real reasons).
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest
from rich.console import Console
from support import paths
from support.paths import REPO
from support.real_data import session_from_report

from sdpa_tui import cli
from sdpa_tui.core.backends import ALL_BACKENDS, Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.records import (
    BackendStatus,
    Dispatch,
    Environment,
    KernelCapture,
    KernelInfo,
    Ready,
    Sample,
)
from sdpa_tui.core.sweep.sweep_findings import crossovers
from sdpa_tui.core.sweep.sweep_lengths import MAX_POINTS, parse_seqs, sweep_workloads
from sdpa_tui.core.sweep.sweep_points import PENDING, SKIPPED, Sweep, SweepPoint
from sdpa_tui.core.workload import Workload, WorkloadError
from sdpa_tui.exports.sweep.sweep_documents import CSV_COLUMNS, sweep_csv, sweep_dict, sweep_markdown
from sdpa_tui.exports.sweep.sweep_terminal import chart_lines, render

REPORTS = paths.REPORTS / "h100-torch2.11"
C, F, E, M = Backend.CUDNN, Backend.FLASH, Backend.EFFICIENT, Backend.MATH

GPU_ENV = Environment(  # MADE-UP environment for the made-up sessions
    device="cuda:0", device_name="Test GPU", torch_version="2.11.0+cu130", cuda_version="13.0",
    cudnn_version="9.19.0", sm="9.0", sm_count=132, memory_total_bytes=80 << 30,
)


# ------------------------------------------------------------------ parsing the lengths
@pytest.mark.parametrize(
    "text, seqs",
    [
        ("128,256,512", (128, 256, 512)),
        ("256:32768", (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)),
        ("64:64", (64,)),
        ("1:4", (1, 2, 4)),
        ("512, 128,128", (128, 512)),  # sorted, without repeats
        ("100,128:512", (100, 128, 256, 512)),  # a list and a range mixed
        ("384", (384,)),
    ],
)
def test_parse_seqs(text, seqs):
    assert parse_seqs(text) == seqs


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "empty"),
        ("  ", "empty"),
        ("abc", "not a whole number"),
        ("1.5", "not a whole number"),
        ("0", "from 1 to"),
        ("-5", "from 1 to"),
        ("2097152", "from 1 to"),
        ("256:128", "goes down"),
        ("100:1000", "powers of two"),
        ("256:", "both ends"),
        (":512", "both ends"),
        ("1:2:4", "A:B"),
        ("128,,256", "empty item"),
        (",".join(str(n) for n in range(1, MAX_POINTS + 2)), "at most"),
    ],
)
def test_parse_seqs_refuses_with_a_clear_reason(text, words):
    with pytest.raises(ValueError) as info:
        parse_seqs(text)
    assert words in str(info.value)


def test_kv_seq_follows_seq_unless_fixed():
    base = Workload(batch=1, heads=4, kv_heads=4, head_dim=64)
    assert [(w.seq, w.kv_seq) for w in sweep_workloads(base, (128, 256))] == [(128, 128), (256, 256)]
    assert [(w.seq, w.kv_seq) for w in sweep_workloads(base, (128, 256), kv_seq=64)] == [(128, 64), (256, 64)]


def test_a_length_whose_workload_is_invalid_is_named():
    with pytest.raises(WorkloadError, match="at seq 262,144"):
        sweep_workloads(Workload(batch=64, heads=64, kv_heads=64, head_dim=128), (1024, 262_144))


# ------------------------------------------------------------------ the command line
def sweep_exit(argv, capsys) -> tuple[int, str]:
    """Run ``sdpa-tui sweep ...`` up to where it would start the engine; the code and stderr."""
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    assert captured.out == ""
    return code, captured.err


@pytest.mark.parametrize(
    "argv, words",
    [
        (["sweep"], "--seq"),
        (["sweep", "--seq", "100:1000"], "powers of two"),
        (["sweep", "--seq", "256:128"], "goes down"),
        (["sweep", "--seq", "128,x"], "'x'"),
        (["sweep", "--seq", "0"], "from 1 to"),
        (["sweep", "--batch", "64", "--heads", "64", "--head-dim", "128", "--seq", "1024,262144"], "at seq 262,144"),
        (["sweep", "--seq", "128", "--duration", "0"], "--duration"),
        (["sweep", "--seq", "128", "--device", "gpu"], "gpu"),
        (["sweep", "--seq", "128", "--heads", "8", "--kv-heads", "3"], "kv_heads"),
    ],
)
def test_sweep_usage_errors_exit_2_with_one_line(argv, words, capsys):
    code, err = sweep_exit(argv, capsys)
    assert code == cli.EXIT_USAGE == 2
    assert err.startswith("sdpa-tui: error: ") and err.count("\n") == 1, err
    assert words in err, err


def test_sweep_malformed_value_exits_2(capsys):
    code, err = sweep_exit(["sweep", "--seq", "128", "--batch", "two"], capsys)
    assert code == 2 and "error:" in err


def test_sweep_options():
    args, workload, backends = cli.parse(
        ["--batch", "3", "sweep", "--seq", "256:1024", "--heads", "4", "--kv-seq", "512", "--backends", "flash,math",
         "--device", "cpu", "--duration", "0.5", "--no-stop-after-oom", "--json", "a.json", "--csv", "a.csv",
         "--markdown", "a.md"]
    )
    assert args.command == "sweep" and args.sweep_seq == "256:1024" and args.kv_seq == 512
    assert (workload.batch, workload.heads) == (3, 4)  # given before or after 'sweep', both count
    assert backends == (F, M) and args.device == "cpu" and args.duration == 0.5
    assert args.stop_after_oom is False
    assert (args.json, args.csv, args.markdown) == ("a.json", "a.csv", "a.md")
    defaults, _, _ = cli.parse(["sweep", "--seq", "128"])
    assert defaults.duration == 1.0 and defaults.stop_after_oom is True and defaults.kv_seq is None
    assert defaults.json is None and defaults.csv is None and defaults.markdown is None


def test_report_keeps_its_single_length_seq():
    _, workload, _ = cli.parse(["report", "--seq", "128"])
    assert workload.seq == 128


# ------------------------------------------------------------------ the sweep's bookkeeping (MADE-UP sessions)
def made_up_session(workload: Workload, verdicts: dict) -> Session:
    """MADE-UP: a session as the engine would fill it. ``verdicts``: backend -> ("ok", gpu_us, peak_mib)
    or (status, reason)."""
    session = Session(workload, tuple(verdicts))
    cid = session.next_config_id()
    session.apply(Ready(GPU_ENV))
    ok = [b for b, v in verdicts.items() if v[0] == "ok"]
    session.apply(Dispatch(cid, ok[0] if ok else None, ()))
    for backend, verdict in verdicts.items():
        if verdict[0] != "ok":
            session.apply(BackendStatus(cid, backend, verdict[0], verdict[1]))
            continue
        _, gpu_us, peak_mib = verdict
        session.apply(BackendStatus(cid, backend, "ok"))
        kernel = KernelInfo(f"{backend.short}_kernel", gpu_us * 0.9)
        session.apply(KernelCapture(cid, backend, (kernel,), (gpu_us * 0.9,), int(peak_mib * 2**20)))
        for i in range(5):
            session.apply(Sample(cid, backend, gpu_us, gpu_us * 3, "graph", 8, 1.0 + i))
    return session


BASE = Workload(batch=1, heads=16, kv_heads=16, head_dim=128, dtype="bf16")
OOM_MATH = "out of memory: needed 9.50 GiB more"  # MADE-UP reason, in the engine's words


def made_up_sweep(stop_after_oom: bool = True) -> Sweep:
    """MADE-UP: 4 lengths; Math runs out of memory at 4096; Flash overtakes Mem-efficient at 2048."""
    sweep = Sweep(sweep_workloads(BASE, (512, 1024, 2048, 4096)), ALL_BACKENDS, stop_after_oom)
    verdicts = {
        512: {C: ("ok", 10.0, 1.0), F: ("ok", 30.0, 2.0), E: ("ok", 20.0, 1.0), M: ("ok", 100.0, 40.0)},
        1024: {C: ("ok", 50.0, 2.0), F: ("ok", 120.0, 4.0), E: ("ok", 100.0, 2.0), M: ("ok", 400.0, 160.0)},
        2048: {C: ("ok", 150.0, 4.0), F: ("ok", 210.0, 8.0), E: ("ok", 230.0, 4.0), M: ("ok", 1600.0, 640.0)},
        4096: {C: ("ok", 500.0, 8.0), F: ("ok", 800.0, 16.0), E: ("ok", 900.0, 8.0), M: ("oom", OOM_MATH)},
    }
    for workload in sweep.workloads:
        active = sweep.active()
        sweep.add(made_up_session(workload, {b: v for b, v in verdicts[workload.seq].items() if b in active}).rows())
    return sweep


def test_points_carry_the_medians_of_each_length():
    sweep = made_up_sweep()
    points = {(p.seq, p.backend): p for p in sweep.points()}
    assert len(points) == 4 * 4
    p = points[(2048, F)]
    assert (p.status, p.gpu_us, p.eager_us, p.peak_mib) == ("ok", 210.0, 630.0, 8.0)
    assert p.kernel_us == pytest.approx(189.0) and p.main_kernel == "flash_kernel"
    assert p.tflops == pytest.approx(BASE.with_changes(seq=2048, kv_seq=2048).flops / 210e-6 / 1e12)
    assert points[(4096, M)].status == "oom" and points[(4096, M)].status_text == OOM_MATH


def test_a_backend_out_of_memory_is_skipped_at_longer_lengths():
    sweep = Sweep(sweep_workloads(BASE, (1024, 2048, 4096)), (F, M))
    sweep.add(made_up_session(sweep.workloads[0], {F: ("ok", 100.0, 4.0), M: ("oom", OOM_MATH)}).rows())
    assert sweep.active() == (F,)
    sweep.add(made_up_session(sweep.workloads[1], {F: ("error", "CUDA error: boom")}).rows())
    assert sweep.active() == ()  # Math out of memory, Flash failed: nothing left
    assert sweep.done and sweep.stopped.startswith("stopped after seq 2048")
    points = {(p.seq, p.backend): p for p in sweep.points()}
    assert points[(2048, M)].status == SKIPPED and points[(2048, M)].status_text == "skipped: OOM at 1024"
    assert points[(4096, M)].status_text == "skipped: OOM at 1024"
    assert points[(2048, F)].status == "error"
    assert points[(4096, F)].status_text == "skipped: error at 2048"
    with pytest.raises(ValueError):
        sweep.add([])


def test_the_sweep_stops_when_no_backend_runs():
    """MADE-UP: every backend not eligible or out of memory at the first length: the rest is not measured."""
    sweep = Sweep(sweep_workloads(BASE, (256, 512, 1024)), (C, F))
    sweep.add(made_up_session(sweep.workloads[0], {C: ("not_eligible", "head_dim should be no more than 256"),
                                                    F: ("oom", "out of memory")}).rows())
    assert sweep.done and sweep.active() == ()
    points = {(p.seq, p.backend): p for p in sweep.points()}
    assert points[(512, C)].status_text == "skipped: sweep stopped after seq 256"
    assert points[(512, F)].status_text == "skipped: OOM at 256"


def test_without_stop_after_oom_every_backend_is_measured_everywhere():
    sweep = made_up_sweep(stop_after_oom=False)
    assert sweep.active() == () and not sweep.stopped  # over because every length was measured
    sweep = Sweep(sweep_workloads(BASE, (1024, 2048)), (F, M), stop_after_oom=False)
    sweep.add(made_up_session(sweep.workloads[0], {F: ("oom", "out of memory"), M: ("oom", OOM_MATH)}).rows())
    assert sweep.active() == (F, M) and not sweep.done


def test_an_aborted_sweep_says_why_for_the_lengths_left():
    sweep = Sweep(sweep_workloads(BASE, (1024, 2048)), (F,))
    sweep.add(made_up_session(sweep.workloads[0], {F: ("ok", 100.0, 4.0)}).rows())
    sweep.abort("the engine failed: illegal memory access")
    assert [p.status_text for p in sweep.points()] == [
        "ok", "skipped: not measured: the engine failed: illegal memory access"]



def test_a_running_sweep_shows_the_lengths_it_has_not_reached_as_pending_not_skipped():
    """In the monitor's sweep view the table is drawn after each length: the lengths still to come are "…" (not
    measured yet), never "skip" (which says they will not be); a backend out of memory is skipped at once."""
    sweep = Sweep(sweep_workloads(BASE, (1024, 2048, 4096)), (F, M))
    sweep.add(made_up_session(sweep.workloads[0], {F: ("ok", 100.0, 4.0), M: ("oom", OOM_MATH)}).rows())
    points = {(p.seq, p.backend): p for p in sweep.points()}
    assert points[(2048, F)].status == PENDING and points[(4096, F)].status_text == "pending: not measured yet"
    assert points[(2048, M)].status == SKIPPED and points[(2048, M)].status_text == "skipped: OOM at 1024"
    console = Console(width=100, record=True)
    console.print(render(sweep, sweep.points(), [], GPU_ENV, None, 100))
    text = console.export_text()
    assert "… not measured yet" in text and "skip not measured" in text
    assert [line.split()[1] for line in text.splitlines() if line.strip().startswith(("2048", "4096"))] == ["…", "…"]
    sweep.abort("stopped")
    assert {p.status for p in sweep.points() if p.seq > 1024} == {SKIPPED}


def test_a_backend_with_no_verdict_when_the_lengths_time_was_up_is_skipped_not_an_error():
    """Seen in the monitor's sweep on a busy 2-core machine: Math's eligibility was still being checked at seq 2048
    when its 120 s were up, and the table said "error"; it is measured again at the next length."""
    sweep = Sweep(sweep_workloads(BASE, (2048, 4096)), (F, M))
    session = made_up_session(sweep.workloads[0], {F: ("ok", 100.0, 4.0)})
    session.set_enabled((F, M))  # Math was asked for, and the engine had not answered yet
    points = {p.backend: p for p in sweep.add(session.rows())}
    assert points[F].status == "ok"
    assert points[M].status == SKIPPED and points[M].status_text == "skipped: time was up before its verdict"
    assert sweep.active() == (F, M)


# ------------------------------------------------------------------ crossovers (MADE-UP point lists)
def pt(seq, backend, status="ok", gpu=None, reason="", eager=None, peak=None) -> SweepPoint:
    """MADE-UP point."""
    return SweepPoint(seq, backend, status, reason, gpu_us=gpu, eager_us=eager, peak_mib=peak)


def test_crossovers_of_the_made_up_sweep():
    found = crossovers(made_up_sweep().points())
    assert found == [
        "cuDNN is fastest from seq 512 to 4096, 1.40x–2.00x ahead of the next fastest (GPU/call)",
        "Flash overtakes Mem-efficient at seq 2048 (GPU/call 210.0 µs vs 230.0 µs; at seq 1024: 120.0 µs vs 100.0 µs)",
        "Math runs out of memory at seq 4096 (needed 9.50 GiB more; last ran at seq 2048)",
    ]


def test_an_order_that_flips_between_neighbours_is_reported_with_both_points():
    points = [pt(1024, F, gpu=120.0), pt(1024, E, gpu=100.0), pt(2048, F, gpu=210.0), pt(2048, E, gpu=230.0)]
    assert "Flash overtakes Mem-efficient at seq 2048 (GPU/call 210.0 µs vs 230.0 µs; at seq 1024: 120.0 µs vs 100.0 µs)" \
        in crossovers(points)


def test_no_flip_no_crossover_claim():
    points = [pt(s, b, gpu=t) for s, b, t in [(256, C, 10.0), (256, F, 20.0), (512, C, 30.0), (512, F, 60.0)]]
    found = crossovers(points)
    assert not any("overtakes" in line for line in found)
    assert found == ["cuDNN is fastest from seq 256 to 512, 2.00x ahead of the next fastest (GPU/call)"]


def test_equal_times_are_no_flip():
    points = [pt(256, C, gpu=10.0), pt(256, F, gpu=10.0), pt(512, C, gpu=30.0), pt(512, F, gpu=20.0)]
    assert not any("overtakes" in line for line in crossovers(points))


def test_a_flip_is_only_between_lengths_where_both_ran():
    """MADE-UP: Flash is not eligible at 2048; the flip is stated between 1024 and 4096, the points it has."""
    points = [pt(1024, F, gpu=50.0), pt(1024, E, gpu=40.0),
              pt(2048, F, "not_eligible", reason="seq not a multiple of 8"), pt(2048, E, gpu=90.0),
              pt(4096, F, gpu=150.0), pt(4096, E, gpu=300.0)]
    found = crossovers(points)
    assert ("Flash overtakes Mem-efficient at seq 4096 "
            "(GPU/call 150.0 µs vs 300.0 µs; at seq 1024: 50.0 µs vs 40.0 µs)") in found
    assert "Mem-efficient is the only backend that runs at seq 2048" in found
    assert "Flash is not eligible at seq 2048: seq not a multiple of 8" in found


def test_fastest_by_range_changes_where_the_data_changes():
    points = [pt(256, C, gpu=10.0), pt(256, F, gpu=12.0), pt(512, C, gpu=20.0), pt(512, F, gpu=25.0),
              pt(1024, C, gpu=80.0), pt(1024, F, gpu=60.0)]
    found = crossovers(points)
    assert found[:2] == [
        "cuDNN is fastest from seq 256 to 512, 1.20x–1.25x ahead of the next fastest (GPU/call)",
        "Flash is fastest at seq 1024 (GPU/call 60.0 µs vs 80.0 µs for cuDNN)",
    ]
    assert found[2] == ("Flash overtakes cuDNN at seq 1024 "
                        "(GPU/call 60.0 µs vs 80.0 µs; at seq 512: 25.0 µs vs 20.0 µs)")


def test_close_times_get_enough_digits_to_differ():
    points = [pt(256, C, gpu=210.2), pt(256, F, gpu=210.4)]
    assert crossovers(points) == ["cuDNN is fastest at seq 256 (GPU/call 210.2 µs vs 210.4 µs for Flash)"]


def test_inputs_that_do_not_fit_are_one_finding():
    reason = "inputs: out of memory: needed 64.00 GiB more"
    points = [pt(1024, C, gpu=10.0), pt(1024, F, gpu=20.0), pt(2048, C, "oom", reason=reason),
              pt(2048, F, "oom", reason=reason)]
    found = crossovers(points)
    assert "At seq 2048 the inputs themselves do not fit in memory (needed 64.00 GiB more): no backend runs there" \
        in found
    assert not any("runs out of memory" in line for line in found)


def test_first_failure_per_backend_only():
    points = [pt(512, F, gpu=10.0), pt(512, M, gpu=50.0), pt(1024, M, "oom", reason=OOM_MATH),
              pt(1024, F, gpu=30.0), pt(2048, M, "skipped", reason="OOM at 1024"), pt(2048, F, "error", reason="boom")]
    found = crossovers(points)
    assert "Math runs out of memory at seq 1024 (needed 9.50 GiB more; last ran at seq 512)" in found
    assert "Flash fails at seq 2048: boom (last ran at seq 1024)" in found
    assert sum("Math" in line and "memory" in line for line in found) == 1


def test_eager_clock_on_the_cpu():
    """MADE-UP CPU points: no GPU clock, so the findings compare eager/call."""
    points = [pt(64, F, eager=30.0), pt(64, M, eager=90.0), pt(64, C, "not_eligible", reason="no CPU implementation"),
              pt(128, F, eager=40.0), pt(128, M, eager=200.0),
              pt(128, C, "not_eligible", reason="no CPU implementation")]
    assert crossovers(points) == [
        "Flash is fastest from seq 64 to 128, 3.00x–5.00x ahead of the next fastest (eager/call)",
        "cuDNN is not eligible at any length measured: no CPU implementation",
    ]


def test_one_backend_alone_is_not_called_the_only_one():
    assert crossovers([pt(64, F, eager=30.0), pt(128, F, eager=40.0)]) == []
    assert crossovers([]) == []


# ------------------------------------------------------------------ REAL rows from the H100 reports
def real_sweep() -> tuple[Sweep, dict]:
    """REAL rows at seq 512 (report-small) and 8192 (report-8k): different workloads, see the module doc."""
    small, big = session_from_report(REPORTS / "report-small.json"), session_from_report(REPORTS / "report-8k.json")
    sweep = Sweep([small.workload, big.workload], ALL_BACKENDS)
    sweep.add(small.rows())
    sweep.add(big.rows())
    docs = {n: json.loads((REPORTS / f"report-{name}.json").read_text()) for n, name in ((512, "small"), (8192, "8k"))}
    return sweep, docs


def test_real_rows_become_points_with_the_same_numbers():
    sweep, docs = real_sweep()
    points = {(p.seq, p.backend): p for p in sweep.points()}
    assert len(points) == 8
    for seq, doc in docs.items():
        for entry in doc["backends"]:
            p = points[(seq, Backend(entry["backend"]))]
            assert p.status == entry["status"] == "ok"
            for key in ("gpu_us", "eager_us", "peak_mib", "kernel_us"):
                assert getattr(p, key) == pytest.approx(entry[key], rel=1e-6), (seq, key)
            assert p.main_kernel == entry["main_kernel_short"]


def test_crossovers_of_real_rows():
    sweep, docs = real_sweep()
    gpu = {(seq, e["backend"]): e["gpu_us"] for seq, d in docs.items() for e in d["backends"]}
    low = gpu[(512, "FLASH_ATTENTION")] / gpu[(512, "CUDNN_ATTENTION")]  # Flash is second at both
    high = gpu[(8192, "FLASH_ATTENTION")] / gpu[(8192, "CUDNN_ATTENTION")]
    found = crossovers(sweep.points())
    assert found == [
        f"cuDNN is fastest from seq 512 to 8192, {low:.2f}x–{high:.2f}x ahead of the next fastest (GPU/call)"]


def test_real_rows_with_a_made_up_oom_after_them():
    """REAL points at 512 and 8192, plus a MADE-UP Math OOM at 16384 (torch-style reason)."""
    sweep, _ = real_sweep()
    points = sweep.points() + [pt(16384, M, "oom", reason="out of memory: needed 38.00 GiB more")]
    assert crossovers(points)[-1] == (
        "Math runs out of memory at seq 16384 (needed 38.00 GiB more; last ran at seq 8192)")


# ------------------------------------------------------------------ output
def text_of(renderable, width: int) -> str:
    console = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize("width", [80, 100, 160])
def test_terminal_output_fits_and_says_everything(width):
    sweep = made_up_sweep()
    points = sweep.points()
    text = text_of(render(sweep, points, crossovers(points), GPU_ENV, None, width), width)
    too_long = [line for line in text.splitlines() if len(line.rstrip()) > width]
    assert not too_long, too_long
    assert "[1, 16, N, 128] bf16" in text and "Test GPU" in text
    for backend in ALL_BACKENDS:
        assert backend.label in text
    for seq in (512, 1024, 2048, 4096):
        assert str(seq) in text
    assert "OOM" in text and "1,600" in text and "10.0*" in text  # Math's last point; cuDNN fastest
    assert "Flash overtakes Mem-efficient at seq 2048" in " ".join(text.split())
    assert "C cuDNN" in text and "log scale" in text  # the chart's legend, readable without colour


def test_cpu_output_hides_backends_never_eligible():
    """MADE-UP CPU points (no GPU clock, no peak memory)."""
    sweep = Sweep(sweep_workloads(Workload(batch=1, heads=2, kv_heads=2, head_dim=32), (64, 128)), ALL_BACKENDS)
    env = Environment(device="cpu", device_name="Test CPU", torch_version="2.13.0+cpu", cpu_threads=2)
    for w in sweep.workloads:
        session = Session(w, ALL_BACKENDS)
        cid = session.next_config_id()
        session.apply(Ready(env))
        for b in (C, E):
            session.apply(BackendStatus(cid, b, "not_eligible", f"{b.label} has no CPU implementation"))
        for b, t in ((F, 30.0), (M, 90.0)):
            session.apply(BackendStatus(cid, b, "ok"))
            for i in range(5):
                session.apply(Sample(cid, b, None, t * w.seq / 64, "none", 1, 1.0 + i))
        sweep.add(session.rows())
    points = sweep.points()
    text = text_of(render(sweep, points, crossovers(points), env, None, 80), 80)
    assert "eager µs" in text and "MiB" not in text
    assert "not shown, never eligible: cuDNN, Mem-efficient" in text
    assert "cuDNN is not eligible at any length measured" in " ".join(text.split())


def test_chart_puts_slower_higher_and_labels_each_length():
    points = [pt(256, C, gpu=10.0), pt(256, M, gpu=1000.0), pt(512, C, gpu=20.0), pt(512, M, gpu=4000.0)]
    lines = [line.plain for line in chart_lines(points, 80)]
    rows = lines[1:-2]  # legend first; axis and labels last
    top = next(i for i, line in enumerate(rows) if "M" in line.split("┤")[-1].split("│")[-1])
    bottom = max(i for i, line in enumerate(rows) if "C" in line.split("┤")[-1].split("│")[-1])
    assert top < bottom
    assert "4 ms" in rows[0] and "10 µs" in rows[-1]  # the log axis spans the data
    assert "256" in lines[-1] and "512" in lines[-1] and lines[-1].rstrip().endswith("seq")
    assert all(len(line) <= 80 for line in lines)


def test_chart_of_many_lengths_fits_80_columns():
    factors = ((C, 1.0), (F, 1.5), (E, 2.0), (M, 4.0))  # MADE-UP
    points = [pt(1 << k, b, gpu=(1 << k) * f) for k in range(1, 21) for b, f in factors]
    lines = [line.plain for line in chart_lines(points, 80)]
    assert all(len(line.rstrip()) <= 80 for line in lines), lines


def test_json_csv_and_markdown_documents():
    sweep = made_up_sweep()
    points = sweep.points()
    found = crossovers(points)
    doc = json.loads(json.dumps(sweep_dict(sweep, points, found, GPU_ENV, None, errors=["a non-fatal note"])))
    assert doc["schema_version"] == 2 and doc["kind"] == "sweep"
    assert doc["environment"]["device_name"] == "Test GPU"
    assert doc["base_workload"]["seq"] is None and doc["base_workload"]["dtype"] == "bf16"
    assert doc["seqs"] == [512, 1024, 2048, 4096] and doc["kv_seq_follows_seq"] is True
    assert doc["enabled"] == [b.value for b in ALL_BACKENDS] and doc["clock"] == "GPU/call"
    assert len(doc["points"]) == 16 and doc["crossovers"] == found
    assert doc["points"][0] == {**doc["points"][0], "seq": 512, "backend": "CUDNN_ATTENTION", "status": "ok",
                                "gpu_us": 10.0, "peak_mib": 1.0}
    assert doc["engine_errors"] == ["a non-fatal note"]

    rows = list(csv.DictReader(io.StringIO(sweep_csv(points))))
    assert len(rows) == 16 and tuple(rows[0]) == CSV_COLUMNS
    math_4096 = next(r for r in rows if r["seq"] == "4096" and r["backend"] == "MATH")
    assert (math_4096["status"], math_4096["reason"], math_4096["gpu_us"]) == ("oom", OOM_MATH, "")

    md = sweep_markdown(sweep, points, found, GPU_ENV, None)
    assert md.startswith("# SDPA sweep · [1, 16, N, 128] bf16")
    assert md.count("\n| ") == 1 + 4  # header and one row per length
    assert "**10.0**" in md and "out of memory: needed 9.50 GiB more" in md
    assert "- Flash overtakes Mem-efficient at seq 2048" in md


def test_sweep_modules_do_not_import_torch():
    code = ("import sys, sdpa_tui.commands.sweep, sdpa_tui.core.sweep.sweep_lengths, sdpa_tui.core.sweep.sweep_points, "
            "sdpa_tui.core.sweep.sweep_findings, sdpa_tui.engine.host.headless\n"
            "print(any(m == 'torch' or m.startswith('torch.') for m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "False"


# ------------------------------------------------------------------ through the real engine (CPU)
SMALL_SWEEP = ("--seq", "32,64", "--batch", "1", "--heads", "2", "--head-dim", "16")


def run_sweep(*args: str, **env: str) -> subprocess.CompletedProcess:
    """``sdpa-tui sweep`` as a user runs it, in a process of its own; ``env`` added to this one's."""
    return subprocess.run(
        [sys.executable, "-m", "sdpa_tui", "sweep", *args], cwd=REPO, capture_output=True, text=True,
        timeout=120, env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", **env},
    )


@pytest.mark.torch_range
def test_sweep_on_the_cpu_through_the_engine(tmp_path):
    """One engine process for two lengths; table on stdout, files written, exit code 0."""
    paths = {kind: tmp_path / f"sweep.{kind}" for kind in ("json", "csv", "md")}
    proc = run_sweep("--device", "cpu", *SMALL_SWEEP, "--dtype", "fp32", "--duration", "0.3",
                     "--json", str(paths["json"]), "--csv", str(paths["csv"]), "--markdown", str(paths["md"]))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "seq 32:" in proc.stderr and "seq 64:" in proc.stderr  # a progress line per length
    assert "SDPA sweep · [1, 2, N, 16] fp32" in proc.stdout and "log scale" in proc.stdout

    doc = json.loads(paths["json"].read_text())
    assert doc["kind"] == "sweep" and doc["seqs"] == [32, 64] and doc["clock"] == "eager/call"
    assert doc["environment"]["device"] == "cpu"
    points = {(p["seq"], p["backend"]): p for p in doc["points"]}
    assert len(points) == 8
    for seq in (32, 64):
        for backend in (F, M):  # the CPU's two real backends ran at both lengths
            p = points[(seq, backend.value)]
            assert p["status"] == "ok" and p["eager_us"] > 0 and p["gpu_us"] is None, p
            assert p["kv_seq"] == seq
        for backend in (C, E):
            assert points[(seq, backend.value)]["status"] == "not_eligible"
    assert doc["crossovers"] == crossovers([SweepPoint(**{**p, "backend": Backend(p["backend"])})
                                            for p in doc["points"]])
    assert any("not eligible at any length" in line for line in doc["crossovers"])
    assert any("is fastest" in line for line in doc["crossovers"])

    rows = list(csv.DictReader(io.StringIO(paths["csv"].read_text())))
    assert [(r["seq"], r["backend"]) for r in rows] == [(str(s), b.value) for s in (32, 64) for b in ALL_BACKENDS]
    assert paths["md"].read_text().startswith("# SDPA sweep")
    assert not list(tmp_path.glob(".sdpa-tui-*"))  # no temporary files left behind


def test_a_device_that_is_not_there_exits_2_and_writes_nothing(tmp_path):
    """cuda:99 is bad input, with or without a GPU on this box: refused before any engine starts."""
    path = tmp_path / "sweep.json"
    proc = run_sweep("--device", "cuda:99", *SMALL_SWEEP, "--json", str(path))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("sdpa-tui: error: --device cuda:99: ") and proc.stderr.count("\n") == 1
    assert not path.exists() and proc.stdout == ""


def test_an_engine_that_dies_exits_1_and_writes_nothing(tmp_path):
    """The engine dies in its first timing slice (SDPA_TUI_FAULT=exit): exit 1, said in one line."""
    path = tmp_path / "sweep.json"
    proc = run_sweep("--device", "cpu", *SMALL_SWEEP, "--json", str(path), SDPA_TUI_FAULT="exit")
    assert proc.returncode == 1, proc.stderr
    assert "engine" in proc.stderr and "Traceback" not in proc.stderr
    assert not path.exists() and proc.stdout == ""



def test_the_sweep_says_where_a_backends_gradients_turn_nonfinite_or_its_error_jumps():
    """Issue 19, item 1: along the sweep, where a backend's error jumps or turns non-finite."""
    from dataclasses import replace as changed

    from sdpa_tui.core.sweep.sweep_findings import accuracy_findings

    def point(seq, backend, error, grad, nonfinite=()):
        return SweepPoint(seq, backend, "ok", gpu_us=10.0, error=error, grad_error=grad, nonfinite=nonfinite)

    F, M = Backend.FLASH, Backend.MATH
    points = [point(512, F, 2e-3, 3e-3), point(1024, F, 2e-3, 4e-2), point(2048, F, 2e-3, None, ("dq",)),
              point(512, M, 1e-3, 2e-3), point(1024, M, 1e-3, 3e-3), point(2048, M, 1e-3, 4e-3)]
    by = {(p.seq, p.backend): p for p in points}
    lines = accuracy_findings([512, 1024, 2048], [F, M], by)
    assert lines == [
        "Flash holds NaN or Inf in dq from seq 2048",
        "Flash's gradient error jumps at seq 1024: 4.0e-02 against 3.0e-03 at seq 512 (max |err| / max |ref| vs "
        "float64 MATH)",
    ]
    assert accuracy_findings([512, 1024], [M], by) == []
    row = changed(points[2]).to_dict()
    assert row["nonfinite"] == ["dq"] and row["grad_error"] is None
    assert "nonfinite" in CSV_COLUMNS and "dq" in sweep_csv([points[2]]).splitlines()[1]


# ------------------------------------------------------------------ crossovers beyond the spread (issue 36, item 10)
def spread_pt(seq, backend, eager, low, high) -> SweepPoint:
    """MADE-UP: a CPU point, its eager median and the 10th and 90th percentiles of its samples."""
    return SweepPoint(seq, backend, "ok", eager_us=eager, eager_spread=(low, high))


def test_a_crossover_from_points_whose_spreads_overlap_is_not_claimed():
    """Under contention the in-TUI sweep said "Math overtakes Flash at seq 256" from one noisy point: Math's median
    under Flash's there, each spread over the other's."""
    points = [spread_pt(128, F, 10.0, 9.5, 10.5), spread_pt(128, M, 20.0, 19.0, 21.0),
              spread_pt(256, F, 40.0, 18.0, 90.0), spread_pt(256, M, 35.0, 30.0, 80.0)]
    found = crossovers(points)
    assert not any("overtakes" in line for line in found), found
    medians_only = [SweepPoint(p.seq, p.backend, "ok", eager_us=p.eager_us) for p in points]
    assert any("Math overtakes Flash at seq 256" in line for line in crossovers(medians_only)), \
        "the medians alone would claim it"


def test_an_order_that_flips_at_one_length_and_back_at_the_next_is_one_noisy_point_not_two_crossovers():
    points = [spread_pt(128, F, 10.0, 9.5, 10.5), spread_pt(128, M, 20.0, 19.0, 21.0),
              spread_pt(256, F, 90.0, 88.0, 92.0), spread_pt(256, M, 40.0, 39.0, 41.0),  # every sample slowed
              spread_pt(512, F, 60.0, 58.0, 62.0), spread_pt(512, M, 150.0, 140.0, 160.0)]
    assert not any("overtakes" in line for line in crossovers(points))


def test_a_crossover_beyond_the_spread_is_claimed_between_the_lengths_where_the_order_is_clear():
    points = [spread_pt(128, F, 30.0, 29.0, 31.0), spread_pt(128, M, 20.0, 19.0, 21.0),
              spread_pt(256, F, 40.0, 35.0, 45.0), spread_pt(256, M, 41.0, 38.0, 44.0),  # within the spread
              spread_pt(512, F, 60.0, 58.0, 62.0), spread_pt(512, M, 150.0, 140.0, 160.0),
              spread_pt(1024, F, 120.0, 118.0, 122.0), spread_pt(1024, M, 600.0, 590.0, 610.0)]
    overtakes = [line for line in crossovers(points) if "overtakes" in line]
    assert overtakes == ["Flash overtakes Math at seq 512 (eager/call 60.0 µs vs 150.0 µs; "
                         "at seq 128: 30.0 µs vs 20.0 µs)"]


def test_a_point_keeps_the_spread_of_its_samples():
    sweep = Sweep(sweep_workloads(BASE, (512,)), (F,))
    (point,) = sweep.add(made_up_session(sweep.workloads[0], {F: ("ok", 100.0, 4.0)}).rows())
    assert point.gpu_spread == (100.0, 100.0) and point.eager_spread == (300.0, 300.0)
    assert json.loads(json.dumps(point.to_dict()))["gpu_spread"] == [100.0, 100.0]
