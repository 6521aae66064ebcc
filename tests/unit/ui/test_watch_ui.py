"""``sdpa-tui watch``'s live Calls view, driven with Pilot on the CPU.

Real programs run watched (tests/watch_programs); the lab's engine is the fake one (the lab
itself is covered by the UI tests). The snapshot is fed states recorded from a real run of
shapes.py, so it is the same on every run.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from support.paths import FIXTURES, PROGRAMS
from support.ui_fakes import FakeEngine, FakeGpuSource, settle, widget_text
from textual.widgets import DataTable, Log

from sdpa_tui.core.backends import ALL_BACKENDS
from sdpa_tui.core.calls.watch_report import build_report
from sdpa_tui.core.calls.watched_calls import ProcessState
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.workload import Workload
from sdpa_tui.ui.watch.watch_app import WatchApp
from sdpa_tui.watch.program.watched_program import WatchedProgram

RECORDED = FIXTURES / "watch" / "shapes_states.json"
START_S = 180.0  # the watched program imports torch on a shared 2-core machine


def watch_app(program, log_path: str) -> tuple[WatchApp, FakeEngine]:
    engine = FakeEngine()
    app = WatchApp(Session(Workload(), ALL_BACKENDS), engine, FakeGpuSource(), export_dir="unused")
    engine.app = app
    app.watch_program(program, log_path)
    return app, engine


def watch_recorded(program, tmp_path, monkeypatch) -> WatchApp:
    """A recorded program's app, its log an empty file in ``tmp_path`` (the working directory)."""
    monkeypatch.chdir(tmp_path)
    Path("program.log").write_text("")
    return watch_app(program, "program.log")[0]


def watch_script(name: str, log_file) -> tuple[WatchedProgram, WatchApp, FakeEngine]:
    """tests/watch_programs/<name> run watched, its output into the fixture's log file."""
    path, f = log_file
    watched = WatchedProgram([sys.executable, str(PROGRAMS / name)])
    watched.log_to(f)
    return (watched, *watch_app(watched, path))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def log_file(tmp_path):
    path = tmp_path / "program.log"
    with open(path, "ab", buffering=0) as f:
        yield str(path), f


async def test_shapes_rows_detail_log_exit_code_and_try_in_lab(log_file):
    path, _ = log_file
    watched, app, engine = watch_script("shapes.py", log_file)
    async with app.run_test(size=(140, 45)) as pilot:
        await settle(pilot, until=lambda: app.exit_code is not None and app.calls.query_one(DataTable).row_count == 5,
                     timeout=START_S)
        await settle(pilot, until=lambda: "exited with code 0" in widget_text(app, "#watch-banner"), timeout=10)
        calls = app.calls
        assert app.screen is calls
        table = calls.query_one(DataTable)
        assert table.row_count == 5
        detail = str(calls.query_one("#call-detail").render())
        assert "why not cuDNN: " in detail and "why not Mem-efficient: " in detail
        assert "SDPA chose" in detail and "shapes.py" in detail
        await settle(pilot, until=lambda: calls.query_one(Log).line_count > 0, timeout=10)
        log_text = "\n".join(calls.query_one(Log).lines)
        expected = Path(path).read_text()
        assert expected.strip() and expected.split()[0] in log_text  # the program's first printed number
        assert path in widget_text(app, "#watch-banner")
        # the dropout row: MATH, with Flash's reason naming dropout
        dropout_index = next(i for i, key in enumerate(calls.row_keys) if calls.rows[key].signature.dropout_p)
        await pilot.press(*["down"] * dropout_index)
        detail = str(calls.query_one("#call-detail").render())
        assert "dropout_p 0.5" in detail and "why not Flash" in detail
        # t: the selected call's shape becomes the lab's workload, and the lab shows
        table.move_cursor(row=0)
        await pilot.pause()
        row = calls.selected_row()
        await pilot.press("t")
        await settle(pilot, until=lambda: app.screen is not calls, timeout=5)
        w = engine.config.workload
        q, kv = row.signature.q_shape, row.signature.kv_shape
        assert (w.batch, w.heads, w.seq, w.head_dim, w.kv_heads, w.kv_seq) == (q[0], q[1], q[2], q[3], kv[1], kv[2])
        assert w.dtype == "fp32" and engine.paused[-1] is False
        await pilot.press("a")
        await settle(pilot, until=lambda: app.screen is calls, timeout=5)
        assert engine.paused[-1] is True  # the lab rests while the Calls view shows
        await pilot.press("q")
    assert not alive(watched.process.pid)


async def test_quit_stops_a_running_program_and_its_child(log_file):
    path, _ = log_file
    watched, app, _ = watch_script("sleeper.py", log_file)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, until=lambda: "ready" in Path(path).read_text(), timeout=START_S)
        await settle(pilot, until=lambda: app.calls.query_one(DataTable).row_count == 1, timeout=10)
        assert "running" in widget_text(app, "#watch-banner")
        child = int(next(line.split()[1] for line in Path(path).read_text().splitlines() if line.startswith("child ")))
        assert alive(child)
        await pilot.press("ctrl+c")
    assert app.stopped_by_ui
    deadline = time.monotonic() + 5
    while (alive(child) or alive(watched.process.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(watched.process.pid) and not alive(child)


async def test_crash_shows_traceback_and_keeps_calls(log_file):
    _, app, _ = watch_script("crash.py", log_file)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, until=lambda: app.exit_code is not None and "Error" in widget_text(app, "#watch-banner"),
                     timeout=START_S)
        banner = widget_text(app, "#watch-banner")
        assert "exited with code 1" in banner and "crashed on purpose" in banner
        assert app.calls.selected_row().count == 2


class RecordedProgram:
    """Replays states recorded from a real watched run: the program has ended, time stands still."""

    def __init__(self) -> None:
        data = json.loads(RECORDED.read_text())
        self.display = ["python", "tests/watch_programs/shapes.py"]
        self.exit_code = data["exit_code"]
        self.states = [ProcessState.from_dict(s) for s in data["states"]]

    def start(self) -> None:
        pass

    def poll(self) -> int | None:
        return self.exit_code

    def report(self, exit_code):
        return build_report(self.display, exit_code, self.states, 2.5)

    def close(self) -> None:
        pass


def test_calls_view_snapshot(snap_compare, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("shapes.log").write_text("recorded output of shapes.py\n")
    app, _ = watch_app(RecordedProgram(), "shapes.log")

    async def run_before(pilot) -> None:
        await settle(pilot, until=lambda: app.calls is not None and app.calls.query_one(Log).line_count > 0)

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


async def test_at_80_columns_a_plain_scripts_shapes_show_where_empty_columns_were(tmp_path, monkeypatch):
    """No call from an nn.Module and no advice yet: the module and saving columns, which would say nothing in any
    row, give their width to the call's shapes (at 80x24 the q shape was cut to ``[2,8,``)."""
    app = watch_recorded(RecordedProgram(), tmp_path, monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, until=lambda: app.calls is not None and len(app.calls.rows) == 5)
        await settle(pilot)
        header, *rows = widget_text(app, "#calls-table").splitlines()
        assert "best (b)" in header and "q shape" in header and "kv shape" in header, header
        assert "module" not in header and "saving" not in header, header
        assert all("[2,8,16,32]" in row for row in rows[:5]), rows


class RankedProgram(RecordedProgram):
    """Two ranks of a job that has ended: a signature both made (3 and 5 calls), one only rank 1 made."""

    def __init__(self) -> None:
        from sdpa_tui.core.calls.call_signature import CallSignature
        from sdpa_tui.core.calls.watched_calls import CallStats

        both = CallSignature((1, 2, 16, 8), (1, 2, 16, 8), "torch.float32", "cpu", causal=True)
        one = CallSignature((1, 2, 16, 8), (1, 2, 32, 8), "torch.float32", "cpu")
        self.display = ["torchrun", "--nproc_per_node", "2", "ranks.py"]
        self.exit_code = 0
        self.states = [
            ProcessState(pid=10, rank=0, calls=[CallStats(both, count=3, backend="FLASH_ATTENTION", host_us=[10.0])]),
            ProcessState(pid=11, rank=1, calls=[CallStats(both, count=5, backend="FLASH_ATTENTION", host_us=[12.0]),
                                                CallStats(one, count=2, backend="FLASH_ATTENTION", host_us=[9.0])]),
        ]


async def test_r_shows_one_ranks_calls_then_the_next_then_all(tmp_path, monkeypatch):
    app = watch_recorded(RankedProgram(), tmp_path, monkeypatch)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, until=lambda: app.calls is not None and len(app.calls.rows) == 2)

        def counts() -> list[int]:
            return sorted(row.count for row in app.calls.rows.values())

        assert counts() == [2, 8]
        await pilot.press("r")
        await settle(pilot, until=lambda: "rank 0 alone" in widget_text(app, "#watch-banner"))
        assert counts() == [3], "rank 0 made one signature, 3 calls"
        await pilot.press("r")
        await settle(pilot, until=lambda: "rank 1 alone" in widget_text(app, "#watch-banner"))
        assert counts() == [2, 5]
        assert "rank 1 (cpu): 5 calls, Flash" in widget_text(app, "#call-detail") or \
            "rank 1 (cpu): 2 calls, Flash" in widget_text(app, "#call-detail")
        await pilot.press("r")
        await settle(pilot, until=lambda: "alone" not in widget_text(app, "#watch-banner"))
        assert counts() == [2, 8]


def test_watch_logs_go_to_the_cache_and_only_the_newest_are_kept(tmp_path, monkeypatch):
    """Each live watch run left its output log in /tmp for good (issue 21, item 4)."""
    import os

    from sdpa_tui.commands import watch_monitor

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = watch_monitor.log_dir()
    assert folder == str(tmp_path / "sdpa-tui" / "watch")
    for i in range(watch_monitor.KEEP_LOGS + 3):
        path = os.path.join(folder, f"sdpa-tui-watch-old-{i:02d}.log")
        open(path, "w").close()
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    new = watch_monitor.log_file_path()
    open(new, "w").close()
    left = sorted(e for e in os.listdir(folder))
    assert len(left) == watch_monitor.KEEP_LOGS and os.path.basename(new) in left
    assert "sdpa-tui-watch-old-00.log" not in left and f"sdpa-tui-watch-old-{watch_monitor.KEEP_LOGS + 2:02d}.log" in left


async def test_b_measures_advice_after_the_program_exited_and_shows_best_saving_and_code(tmp_path, monkeypatch):
    """Issue 18, item 4: the Calls view's best and saving columns, and the alternatives with their code in the
    detail pane (the advisor is a stand-in here: what watch/advice/advise.py measures is tested in
    test_watch_advice)."""
    from sdpa_tui.core.backends import Backend
    from sdpa_tui.core.calls.advice import advise
    from sdpa_tui.core.protocol.records import BackendStatus, Dispatch, Sample

    def advisor(report, say=None, progress=None):
        lab = Session(Workload(dtype="fp32"))
        lab.apply(Dispatch(0, Backend.FLASH, ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH", "CUDNN_ATTENTION"), ""))
        for backend, us in ((Backend.MATH, 300.0), (Backend.FLASH, 100.0)):
            lab.apply(BackendStatus(0, backend, "ok"))
            for v in (us, us * 1.01, us * 0.99, us, us * 1.02, us * 0.98):
                lab.apply(Sample(0, backend, None, v, "none", 10, 0.0))
        report.advice = [advise(lab, "MATH") if row.backend == "MATH" else None for row in report.rows]
        report.advice_measured = "alternatives measured after the program exited: 2 signature(s), 0.1 s of a 300 s budget"
        report.advice_left_out = ["FlexAttention not measured: less than 20 s of the budget was left"]
        if say:
            say("sdpa-tui watch: measured")

    app = watch_recorded(RecordedProgram(), tmp_path, monkeypatch)
    app.advisor = advisor
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot, until=lambda: app.calls is not None and app.calls.rows and app.exit_code is not None)
        table = app.calls.query_one(DataTable)
        math_keys = [k for k, row in app.calls.rows.items() if row.backend == "MATH"]
        assert math_keys and all(str(table.get_cell(k, "best")) == "" for k in math_keys)
        await pilot.press("b")
        await settle(pilot, until=lambda: app.calls.advice)
        await settle(pilot)
        for key in math_keys:
            assert str(table.get_cell(key, "best")) == "Flash"
            assert str(table.get_cell(key, "saving")).strip() == "200.0 µs"
        other = next(k for k, row in app.calls.rows.items() if row.backend != "MATH")
        assert str(table.get_cell(other, "best")) == ""
        table.move_cursor(row=app.calls.row_keys.index(math_keys[0]))
        await settle(pilot, until=lambda: "code    with sdpa_kernel" in widget_text(app, "#call-detail"))
        detail = widget_text(app, "#call-detail")
        assert "alternatives (lab, eager clock" in detail and "best    Flash: saves 200.0 µs per call" in detail
        assert "FlexAttention not measured" in " ".join(detail.split()), "the run's whole note under the call"
        said = [str(n.message) for n in app._notifications]
        assert ("alternatives measured after the program exited: 2 signature(s), 0.1 s of a 300 s budget; more under "
                "the selected call") in said, said
        assert not any("FlexAttention" in text for text in said), "the notice is short: it covered the table"


class TwoModelsProgram(RecordedProgram):
    """A Llama and a GPT-2 of one signature (their rows merge, so the module cell names both), and a call from a
    deeply nested module: module cells of about 90 characters (issue 36, item 2)."""

    def __init__(self) -> None:
        from sdpa_tui.core.calls.call_signature import CallSignature
        from sdpa_tui.core.calls.watched_calls import CallStats

        merged = CallSignature((2, 4, 16, 8), (2, 4, 16, 8), "torch.float32", "cpu", mask="bool", mask_shape=(2, 1, 16, 16))
        nested = CallSignature((2, 4, 32, 8), (2, 2, 32, 8), "torch.float32", "cpu", causal=True, gqa=True)
        modules = ["model.layers.0.self_attn", "model.layers.1.self_attn", "transformer.h.0.attn", "transformer.h.1.attn"]
        deep = "encoder.blocks.0.mixer.attention_stack.layers.3.cross_attention_with_rotary_embeddings.core"
        self.display = ["python", "two_models.py"]
        self.exit_code = 0
        self.states = [ProcessState(pid=10, calls=[
            CallStats(merged, count=16, site="/home/user/project/two_models.py:57", module=modules[0], modules=modules,
                      backend="MATH", host_us=[23.0, 25.0, 24.0]),
            CallStats(nested, count=1234, site="/home/user/project/two_models.py:61", module=deep, modules=[deep],
                      backend="FLASH_ATTENTION", host_us=[13.0, 15.0, 14.0]),
        ])]


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (120, 40)])
async def test_every_rows_count_backend_time_and_best_are_on_screen_and_long_modules_elided(size, tmp_path, monkeypatch):
    """Issue 36, item 2: at 120x40 the view ended at ``q shape [``, at 80x24 only site and module showed."""
    app = watch_recorded(TwoModelsProgram(), tmp_path, monkeypatch)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, until=lambda: app.calls is not None and len(app.calls.rows) == 2)
        await settle(pilot)
        table_lines = widget_text(app, "#calls-table").splitlines()
        assert all(len(line) <= size[0] for line in table_lines)
        header = table_lines[0]
        for heading in ("site", "count", "backend", "fwd time", "best (b)"):
            assert heading in header, (heading, header)
        rows = {line.split()[0]: line for line in table_lines[1:3]}
        assert set(rows) == {"two_models.py:57", "two_models.py:61"}, table_lines
        assert "16" in rows["two_models.py:57"].split() and "Math" in rows["two_models.py:57"]
        assert "24.0 µs cpu" in rows["two_models.py:57"]
        assert "1,234" in rows["two_models.py:61"].split() and "Flash" in rows["two_models.py:61"]
        assert "14.0 µs cpu" in rows["two_models.py:61"]
        assert header.index("best (b)") < size[0] - len("best (b)")
        table = app.calls.query_one(DataTable)
        for i in range(table.row_count):  # each module cell elided in the middle; the panel has the whole path
            table.move_cursor(row=i)
            await settle(pilot)
            row = app.calls.selected_row()
            module = str(table.get_cell_at((i, table.get_column_index("module"))))
            whole = ", ".join(row.modules)
            if len(whole) <= app.calls.module_width:  # 120 columns, the saving column not shown before advice
                assert module == whole
            else:
                assert "…" in module and len(module) <= app.calls.module_width < len(whole)
                assert whole.startswith(module.split("…")[0]) and whole.endswith(module.split("…")[1])
            assert f"modules {whole}" in str(app.calls.query_one("#call-detail").render())


class BusyHostProgram(TwoModelsProgram):
    """Still running on a host busy beyond it: most of the Flash row's calls ran meanwhile, none of the Math row's."""

    def __init__(self) -> None:
        super().__init__()
        self.exit_code = None
        self.states[0].calls[1].contended_calls = 1000

    def report(self, exit_code):
        report = super().report(exit_code)
        report.contention = "tasks waited 45%, others used 1.3 cores"
        return report


async def test_times_measured_on_a_host_busy_beyond_the_program_are_marked(tmp_path, monkeypatch):
    """Issue 36, item 7: the Calls view had no contention flag (the lab's header has one)."""
    app = watch_recorded(BusyHostProgram(), tmp_path, monkeypatch)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, until=lambda: app.calls is not None and len(app.calls.rows) == 2)
        await settle(pilot)
        assert "HOST BUSY beyond the program: tasks waited 45%, others used 1.3 cores" in \
            " ".join(widget_text(app, "#watch-banner").split())
        table = app.calls.query_one(DataTable)
        times = {app.calls.rows[k].backend: str(table.get_cell(k, "time")) for k in app.calls.row_keys}
        assert times == {"FLASH_ATTENTION": "14.0 µs cpu*", "MATH": "24.0 µs cpu"}
        flash = app.calls.row_keys.index(next(k for k, r in app.calls.rows.items() if r.backend == "FLASH_ATTENTION"))
        table.move_cursor(row=flash)
        await settle(pilot)
        detail = " ".join(str(app.calls.query_one("#call-detail").render()).split())
        assert "busy 1,000 of its 1,234 calls (81%) ran while the host was busy beyond the program" in detail


async def test_b_shows_where_the_measuring_stands_while_it_runs(tmp_path, monkeypatch):
    """Issue 36, item 6: signature i of n and the time left of the budget, above the table while ``b`` measures."""
    import threading

    from sdpa_tui.core.calls.advice import AdviceProgress

    seen, release = threading.Event(), threading.Event()

    def advisor(report, say=None, progress=None):
        progress(AdviceProgress(2, 5, "SDPA backends at [2, 8, 16, 32] fp32", 6.4))
        seen.set()
        assert release.wait(10)
        report.advice = [None] * len(report.rows)

    app = watch_recorded(RecordedProgram(), tmp_path, monkeypatch)
    app.advisor = advisor
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, until=lambda: app.calls is not None and app.calls.rows and app.exit_code is not None)
        line = app.calls.query_one("#advice-progress")
        assert not line.display
        await pilot.press("b")
        await settle(pilot, until=lambda: seen.is_set() and "alternatives 2/5" in widget_text(app, "#advice-progress"))
        assert " ".join(widget_text(app, "#advice-progress").split()) == (
            "measuring alternatives 2/5, 6 s left: SDPA backends at [2, 8, 16, 32] fp32")
        release.set()
        await settle(pilot, until=lambda: not line.display)
        assert not line.display, "gone once the measuring ended"


class NanGradientProgram(TwoModelsProgram):
    """The Math row's sampled backwards made dq non-finite (as pytorch#196678's cuDNN backward does), replayed."""

    def __init__(self) -> None:
        from sdpa_tui.core.calls.gradient_check import BackendReplay, GradientCheck
        from sdpa_tui.core.calls.watched_calls import OutputCheck

        super().__init__()
        call = self.states[0].calls[0]
        call.signature = type(call.signature)(**{**vars(call.signature), "grad": True})
        backward = GradientCheck(samples=3, nonfinite={"dq": 3}, first_bad={"dq": 1024}, elements={"dq": 1024},
                                 tolerance=3e-2, repro="/tmp/sdpa-tui-repro/call-1",
                                 replays=[BackendReplay("MATH", "non-finite", "dq 1,024 of 1,024", 30.0),
                                          BackendReplay("EFFICIENT_ATTENTION", "clean", "", 20.0)])
        call.check = OutputCheck(samples=1, max_rel_error=1e-7, tolerance=2e-3, ok=True, backward=backward)


async def test_a_call_whose_backward_made_nan_is_marked_red_and_its_panel_says_gradients(tmp_path, monkeypatch):
    """Issue 35: the Calls view said nothing of the gradients; the forward check alone passed."""
    app = watch_recorded(NanGradientProgram(), tmp_path, monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, until=lambda: app.calls is not None and len(app.calls.rows) == 2)
        await settle(pilot)
        table = app.calls.query_one(DataTable)
        backends = {app.calls.rows[k].backend: table.get_cell(k, "backend") for k in app.calls.row_keys}
        assert str(backends["MATH"]).startswith("✗ ") and backends["MATH"].style == "bold red"
        assert not str(backends["FLASH_ATTENTION"]).startswith("✗")
        table.move_cursor(row=app.calls.row_keys.index(next(k for k, r in app.calls.rows.items() if r.backend == "MATH")))
        await settle(pilot)
        detail = " ".join(str(app.calls.query_one("#call-detail").render()).split())
        assert "gradients (MATH backward): dq non-finite in 3 of 3 sampled backward(s) (1,024 of 1,024 elements)" \
            in detail
        assert "EFFICIENT_ATTENTION clean" in detail and "repro: /tmp/sdpa-tui-repro/call-1" in detail
        assert detail.index("gradients (MATH backward)") < detail.index("site "), "the failure first, above the fold"


class FastPathProgram(TwoModelsProgram):
    """An nn.MultiheadAttention in eval with autograd off beside the two models: its calls run SDPA inside C++."""

    def __init__(self) -> None:
        from sdpa_tui.core.calls.watched_calls import UninspectedCalls

        super().__init__()
        self.states[0].uninspected = [UninspectedCalls(
            "nn.MultiheadAttention's fast path (eval, autograd off: torch._native_multi_head_attention)", 1234,
            {"/home/user/project/two_models.py:63": 1234}, ["mha"])]


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_calls_watch_cannot_inspect_get_a_row_with_their_site_and_count(size, tmp_path, monkeypatch):
    """Issue 36, item 4: nn.MultiheadAttention's fast path was undercounted live, with no notice on screen."""
    app = watch_recorded(FastPathProgram(), tmp_path, monkeypatch)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, until=lambda: app.calls is not None and len(app.calls.row_keys) == 3)
        await settle(pilot)
        table = app.calls.query_one(DataTable)
        last = app.calls.row_keys[-1]
        cells = {column: str(table.get_cell(last, column)) for column in ("site", "count", "backend")}
        assert cells == {"site": "two_models.py:63", "count": "1,234", "backend": "not seen (C++)"}
        assert "1,234" in widget_text(app, "#calls-table") and "not seen (C++)" in widget_text(app, "#calls-table")
        table.move_cursor(row=2)
        await settle(pilot)
        detail = " ".join(str(app.calls.query_one("#call-detail").render()).split())
        assert "1,234 calls of nn.MultiheadAttention's fast path" in detail and "two_models.py:63 (1,234 calls)" in detail
        await pilot.press("t")
        await settle(pilot)
        assert app.screen is app.calls, "the lab cannot try calls whose shapes are unseen"
