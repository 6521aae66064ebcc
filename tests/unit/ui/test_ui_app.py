"""The live monitor driven with the Pilot: a fake engine feeds records from real H200 traces.

Every test reads what is on screen (``screen_text`` / ``widget_text``), presses keys as a user
would, and checks what the app sent to the engine.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.ui_fakes import (
    ENGINE_PID,
    H200,
    H200_ORDER_IN_FORCE,
    TRACE_FIXTURES,
    h200_power_not_supported,
    h200_processes_not_supported,
    h200_shared,
    h200_throttled,
    make_test_app,
    screen_text,
    settle,
    trace_calls,
    widget_text,
)
from textual.widgets import Button, Input

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.protocol.engine_events import EngineDied, EngineRecycled, EngineStarting
from sdpa_tui.core.protocol.records import (
    BackendStatus,
    Dispatch,
    EngineError,
    Environment,
    KernelCapture,
    Ready,
    Sample,
)
from sdpa_tui.core.traces import kernel_names
from sdpa_tui.core.workload import Workload
from sdpa_tui.ui import app as app_module
from sdpa_tui.ui.screens.help import HelpScreen
from sdpa_tui.ui.screens.workload_form import WorkloadForm
from sdpa_tui.ui.widgets.backend_panel import BackendPanel
from sdpa_tui.ui.widgets.status_line import StatusLine

SIZE = (120, 40)
CUDNN_SHORT = kernel_names.identify(kernel_names.main_kernel(trace_calls(Backend.CUDNN)[0]).name).short


def status_line(app) -> str:
    return widget_text(app, "#status-line")


async def live(pilot, engine) -> None:
    """Feed a full set of records for the current configuration and wait until it is drawn."""
    app = pilot.app
    engine.feed_live(app)
    await settle(pilot, until=lambda: "SDPA picks" in widget_text(app, "#dispatch"))


# ------------------------------------------------------------------ first frame and live data
async def test_first_frame_says_engine_starting_before_any_record() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert engine.started
        assert "engine starting" in widget_text(app, "#header")
        assert "engine starting" in status_line(app)
        assert len(engine.configs) == 1 and engine.config.workload == Workload()
        assert "asking torch" in widget_text(app, "#dispatch")


async def test_fed_records_show_kernels_clocks_and_dispatch() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        header = widget_text(app, "#header")
        assert "NVIDIA H200 (sm 9.0, 132 SMs" in header
        assert "torch 2.11.0+cu130, CUDA 13.0, cuDNN 9.19.0" in header
        assert "engine ready on NVIDIA H200" in status_line(app)

        cudnn = widget_text(app, "#panel-cudnn")
        assert CUDNN_SHORT.startswith("cudnn_sdpa_sm90_flash_fprop")
        assert CUDNN_SHORT[:40] in cudnn  # the name is long and may wrap at this width
        assert str(app.query_one("#panel-cudnn #kernel").content).startswith(CUDNN_SHORT)
        assert "9.7 µs" in cudnn and "52.0 µs" in cudnn  # GPU/call and eager medians
        assert "SDPA's pick" in cudnn
        assert app.query_one("#panel-cudnn").has_class("-pick")
        assert "flash_fwd_splitkv_kernel" in widget_text(app, "#panel-flash")
        assert "fmha_cutlassF_f16_aligned_64x64_rf_sm80" in widget_text(app, "#panel-efficient")

        # one unit for how full a kernel's launch is, in every panel (Math's GEMM has an occupancy estimate too)
        for backend in ("cudnn", "flash", "efficient", "math"):
            panel = str(app.query_one(f"#panel-{backend} #kernel").content)
            assert "blocks/SM" in panel and "occ" not in panel, panel
        assert "0.48 blocks/SM" in str(app.query_one("#panel-cudnn #kernel").content)  # 64 blocks on 132 SMs

        dispatch = widget_text(app, "#dispatch")
        assert "SDPA picks cuDNN" in dispatch
        assert "cuDNN > Flash > Mem-efficient > Math" in dispatch
        gpu = widget_text(app, "#gpu")
        assert "util" in gpu and "NVIDIA H200" in gpu
        # NVML's reading and how much of the device time is the engine's, with no claim about "now"
        share = app.session.engine_busy.share()
        assert share is not None and 0 < share < 1
        assert "97 % NVML" in gpu and f"engine {100 * share:.0f} %" in gpu
        assert "a kernel was running" not in gpu


@pytest.mark.parametrize("size", [(120, 40), (100, 40)])
async def test_each_panels_error_is_a_whole_number_never_cut(size) -> None:
    """At 120x40 the line of speed, memory and error was cut at the panel's edge: ``err 3.6e…``."""
    app, engine, _ = make_test_app()
    async with app.run_test(size=size) as pilot:
        await live(pilot, engine)
        for backend in ("cudnn", "flash", "efficient", "math"):
            panel = widget_text(app, f"#panel-{backend}")
            error = re.search(r"err (\S+) ", panel)
            assert error and not error.group(1).endswith("…") and "×MATH" in panel, panel


async def test_stale_records_of_an_old_configuration_are_ignored() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        old = engine.config.config_id
        await pilot.press("k")  # causal: a new configuration, measurements reset
        await settle(pilot)
        assert engine.config.config_id == old + 1
        kept = len(app.session.backends[Backend.CUDNN].history)  # earlier workloads' history stays
        engine.feed(app, [
            Sample(old, Backend.CUDNN, gpu_us=999.0, eager_us=999.0),
            BackendStatus(old, Backend.FLASH, "error", "stale error"),
            Dispatch(old, Backend.MATH, priority_order=H200_ORDER_IN_FORCE),
        ])
        await settle(pilot)
        assert len(app.session.backends[Backend.CUDNN].history) == kept
        assert app.session.backends[Backend.CUDNN].gpu.summary() is None
        assert app.session.backends[Backend.FLASH].status == "waiting"
        assert app.session.dispatch is None
        text = screen_text(app)
        assert "999" not in text and "stale error" not in text and "SDPA picks Math" not in text
        assert "asking torch" in widget_text(app, "#dispatch")


# ------------------------------------------------------------------ keys
async def test_f_turns_flash_off_and_sends_a_configuration_without_it() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        before = len(engine.configs)
        await pilot.press("f")
        flash = app.query_one("#panel-flash", BackendPanel)
        await settle(pilot, until=lambda: flash.has_class("-off"))
        assert len(engine.configs) == before + 1
        assert Backend.FLASH not in engine.config.enabled
        assert set(engine.config.enabled) == {Backend.CUDNN, Backend.EFFICIENT, Backend.MATH}
        assert flash.has_class("-off")
        assert "flag off" in widget_text(app, "#panel-flash")
        assert "flash✗" in widget_text(app, "#dispatch")
        assert "Flash flag off" in status_line(app)
        await pilot.press("f")
        await settle(pilot, until=lambda: not flash.has_class("-off"))
        assert Backend.FLASH in engine.config.enabled


async def test_space_pauses_and_the_header_says_so() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        await pilot.press("space")
        await settle(pilot, until=lambda: "PAUSED" in widget_text(app, "#header"))
        assert engine.paused == [True]
        assert "PAUSED" in widget_text(app, "#header")
        assert "paused" in status_line(app)
        await pilot.press("space")
        await settle(pilot, until=lambda: "PAUSED" not in widget_text(app, "#header"))
        assert engine.paused == [True, False]


async def test_at_80_columns_the_header_keeps_pause_and_the_workload_on_screen() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await live(pilot, engine)
        await pilot.press("space")
        await settle(pilot, until=lambda: "PAUSED" in widget_text(app, "#header"))
        first, second = widget_text(app, "#header").splitlines()
        assert "PAUSED" in first and "NVIDIA H200" in first
        assert second.strip() == "workload batch 2 · heads 8 · len 512 · head dim 64 · fp16 · mask none · fwd"


async def test_at_80_columns_a_long_status_message_keeps_its_start_and_ends_cut_with_an_ellipsis() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await live(pilot, engine)
        await pilot.press("l")  # the longest message a key gives fits whole
        await settle(pilot, until=lambda: "legacy API" in status_line(app))
        assert "…" not in status_line(app)
        assert "torch.backends.cuda.sdp_kernel(), which has no cuDNN switch" in " ".join(status_line(app).split())
        # an error's reason can be longer than two rows (a path, an exception's words)
        words = " ".join(f"word{i}" for i in range(60))
        app.status(f"snapshot failed: {words}", error=True)
        await settle(pilot, until=lambda: "snapshot failed" in status_line(app))
        rows = status_line(app).splitlines()
        assert len(rows) == 2 and "snapshot failed: word0 word1" in rows[0], rows
        assert rows[1].rstrip().endswith("…") and "  " not in rows[1].strip(), rows
        assert app.query_one(StatusLine).message.endswith("word59")


async def test_plus_and_minus_double_and_halve_the_sequence_length() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("plus")
        await settle(pilot)
        assert (engine.config.workload.seq, engine.config.workload.kv_seq) == (1024, 1024)
        assert "len 1024 ·" in widget_text(app, "#header")
        await pilot.press("minus")
        await pilot.press("minus")
        await settle(pilot)
        assert (engine.config.workload.seq, engine.config.workload.kv_seq) == (256, 256)
        assert [c.workload.seq for c in engine.configs] == [512, 1024, 512, 256]
        assert len({c.config_id for c in engine.configs}) == len(engine.configs)


async def test_d_k_b_cycle_dtype_toggle_causal_and_direction() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("d")
        await settle(pilot)
        assert engine.config.workload.dtype == "bf16"
        await pilot.press("d", "d")
        await settle(pilot)
        assert [c.workload.dtype for c in engine.configs[1:]] == ["bf16", "fp32", "fp16"]

        await pilot.press("k")
        await settle(pilot)
        assert engine.config.workload.mask == "causal"
        assert "mask causal" in widget_text(app, "#header")
        await pilot.press("k")
        await settle(pilot)
        assert engine.config.workload.mask == "none"

        await pilot.press("b")
        await settle(pilot)
        assert engine.config.workload.direction == "fwd+bwd"
        assert "fwd+bwd" in widget_text(app, "#header")
        await pilot.press("b")
        await settle(pilot)
        assert engine.config.workload.direction == "fwd"


async def test_workload_form_rejects_bad_input_escape_keeps_and_valid_edit_applies() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        configs = len(engine.configs)

        await pilot.press("w")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, WorkloadForm)
        form.query_one("#kv_heads", Input).focus()
        await pilot.press("end", "backspace", "3")
        await pilot.pause()
        assert form.query_one("#kv_heads", Input).value == "3"
        error = widget_text(app, "#form-error")
        assert "kv_heads (3) must divide heads (8)" in error
        assert form.query_one("#apply", Button).disabled
        await pilot.press("enter")  # refused while invalid
        await pilot.pause()
        assert app.screen is form
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, WorkloadForm)
        assert len(engine.configs) == configs
        assert app.session.workload == Workload()
        assert app.session.backends[Backend.CUDNN].history  # nothing was reset

        await pilot.press("w")
        await pilot.pause()
        form = app.screen
        form.query_one("#kv_heads", Input).focus()
        await pilot.press("end", "backspace", "2")
        form.query_one("#head_dim", Input).focus()
        await pilot.press("end", "backspace", "backspace", "1", "2", "8")
        await pilot.pause()
        assert "✓" in widget_text(app, "#form-error")
        assert not form.query_one("#apply", Button).disabled
        await pilot.click("#apply")
        await settle(pilot)
        assert not isinstance(app.screen, WorkloadForm)
        assert len(engine.configs) == configs + 1
        assert engine.config.workload == Workload(kv_heads=2, head_dim=128)
        assert "heads 8/2 kv" in widget_text(app, "#header")
        assert "head dim 128" in widget_text(app, "#header")


async def test_help_lists_the_keys() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for words in ("sdpa-tui keys", "toggle the Flash backend flag", "toggle the mem-efficient backend flag",
                      "toggle the cuDNN backend flag", "toggle the Math backend flag", "pause or resume",
                      "edit the workload", "double the sequence length", "halve the sequence length",
                      "cycle the dtype", "causal mask on or off", "forward + backward", "Chrome trace"):
            assert words in text, words
        from textual.widgets import Markdown

        source = app.screen.query_one(Markdown).source  # every key is in the table, off screen too
        assert all((b.tooltip or b.description) in source for b in app.BINDINGS)
        assert "write a snapshot" in source
        await pilot.press("end")  # the rest of the table, and what the clocks mean, below
        await settle(pilot)
        text = screen_text(app)
        await pilot.press("pageup")
        await settle(pilot)
        text += screen_text(app)
        for words in ("choose the GPU", "Chrome trace", "retry the engine", "Help", "Quit", "command palette", "three clocks"):
            assert words in text, words
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


# ------------------------------------------------------------------ snapshots
async def test_s_writes_a_snapshot_with_report_and_the_engines_trace(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    app, engine, _ = make_test_app(export_dir=exports)
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        await pilot.press("s")
        await settle(pilot, until=lambda: "snapshot saved" in status_line(app))
        assert "snapshot saved to" in status_line(app)
        assert len(engine.captures) == 1
        assert Path(engine.captures[0].directory).is_absolute()

    [snapshot] = [p for p in exports.iterdir()]
    assert snapshot.name.startswith("snapshot-")
    names = {p.name for p in snapshot.iterdir()}
    assert {"snapshot.json", "report.md", "history.csv", "screen.svg", "trace-CUDNN_ATTENTION.json"} <= names
    report = (snapshot / "report.md").read_text()
    for backend in Backend:
        assert backend.value in report
    assert CUDNN_SHORT in report
    trace = snapshot / "trace-CUDNN_ATTENTION.json"
    assert trace.read_bytes() == TRACE_FIXTURES[Backend.CUDNN].read_bytes()


async def test_t_captures_traces_into_a_new_directory(tmp_path: Path) -> None:
    app, engine, _ = make_test_app(export_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        await pilot.press("t")
        await settle(pilot, until=lambda: "traces in" in status_line(app))
        # the status line is two rows: a long path pushes the file names past its end, into its message
        assert "trace-CUDNN_ATTENTION.json" in app.query_one(StatusLine).message
    [directory] = list(tmp_path.iterdir())
    assert directory.name.startswith("traces-")
    assert [p.name for p in directory.iterdir()] == ["trace-CUDNN_ATTENTION.json"]
    assert engine.captures[0].directory == str(directory.resolve())


async def test_s_into_a_directory_that_cannot_be_created_says_snapshot_failed(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    app, engine, _ = make_test_app(export_dir=blocker / "exports")
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        await pilot.press("s")
        await settle(pilot)
        assert "snapshot failed" in status_line(app)
        # the reason comes last; with a long tmp path it runs past the status line's two rows
        assert "Not a directory" in app.query_one(StatusLine).message
        assert app.query_one("#status-line").has_class("-error")
        assert engine.captures == []
        assert app.is_running
        await pilot.press("k")  # still responsive
        await settle(pilot)
        assert engine.config.workload.mask == "causal"
    assert blocker.read_text() == "not a directory\n"


# ------------------------------------------------------------------ faults
async def test_engine_died_is_said_and_the_history_is_kept() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        history = len(app.session.backends[Backend.CUDNN].history)
        assert history > 0
        engine.event(app, EngineDied(exit_code=-6, message="CUDA error: an illegal memory access", retry_in_s=2.0))
        await settle(pilot, until=lambda: "engine died" in widget_text(app, "#header"))
        assert "engine died" in status_line(app)
        assert "history kept" in status_line(app)
        assert "engine died; restarting in 2 s" in widget_text(app, "#header")
        assert len(app.session.backends[Backend.CUDNN].history) == history
        assert "9.7 µs" in widget_text(app, "#panel-cudnn")
        engine.event(app, EngineStarting(attempt=2))
        await settle(pilot, until=lambda: "attempt 2" in widget_text(app, "#header"))
        assert "restarting the engine (attempt 2)" in widget_text(app, "#header")
        engine.feed(app, [Ready(H200)])  # the new engine is up: the note goes
        await settle(pilot, until=lambda: "restarting" not in widget_text(app, "#header"))
        assert "engine ready" in status_line(app)
        assert "9.7 µs" in widget_text(app, "#panel-cudnn")


async def test_r_retries_only_an_engine_that_died() -> None:
    """``r`` on a healthy engine said "retrying the engine" and did nothing."""
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        await pilot.press("r")
        await settle(pilot, until=lambda: "nothing to retry" in status_line(app))
        assert engine.retries == 0
        engine.event(app, EngineDied(exit_code=1, message="boom", retry_in_s=None))
        await settle(pilot, until=lambda: "engine stopped" in widget_text(app, "#header"))
        await pilot.press("r")
        await settle(pilot, until=lambda: "retrying the engine" in status_line(app))
        assert engine.retries == 1


async def test_a_replaced_engine_is_said_plainly_and_history_kept() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        history = len(app.session.backends[Backend.CUDNN].history)
        engine.event(app, EngineRecycled(growth_mib=1100.0))
        await settle(pilot, until=lambda: "host memory" in widget_text(app, "#header"))
        assert "restarting the engine to give host memory back" in widget_text(app, "#header")
        assert "grew 1,100 MiB" in status_line(app) and "history kept" in status_line(app)
        assert not app.query_one("#status-line").has_class("-error"), "not a failure"
        assert len(app.session.backends[Backend.CUDNN].history) == history
        engine.event(app, EngineStarting(attempt=1))
        engine.feed(app, [Ready(H200)])
        await settle(pilot, until=lambda: "restarting" not in widget_text(app, "#header"))
        assert "fresh engine ready" in status_line(app) and "1,100 MiB" in status_line(app)
        assert "9.7 µs" in widget_text(app, "#panel-cudnn")


async def test_engine_error_record_reaches_the_status_line() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        engine.feed(app, [EngineError("MATH: CUDA out of memory (tried to allocate 9.7 GiB)")])
        await settle(pilot, until=lambda: "out of memory" in status_line(app))
        assert app.query_one("#status-line").has_class("-error")


async def test_a_failed_kernel_capture_is_said_in_its_panel_and_the_clocks_stay() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        why = "the profiler process did not answer within 60 s"
        engine.feed(app, [KernelCapture(engine.config.config_id, Backend.FLASH, (), (), error=why)])
        await settle(pilot, until=lambda: "kernel capture failed" in widget_text(app, "#panel-flash"))
        flash = widget_text(app, "#panel-flash")
        assert why in " ".join(flash.replace("│", " ").split()), "the whole reason, wrapped"
        assert "flash_fwd_splitkv_kernel" in flash, "the last kernels seen stay"
        assert "kernel capture failed" not in widget_text(app, "#panel-cudnn")


async def test_no_available_kernel_is_shown_with_each_backends_reason() -> None:
    fp32 = Workload(dtype="fp32")
    enabled = (Backend.CUDNN, Backend.FLASH)
    app, engine, _ = make_test_app(workload=fp32, enabled=enabled)
    why = ("Expected query, key and value to all be of dtype: {Half, BFloat16}. "
           "Got Query dtype: float, Key dtype: float, and Value dtype: float instead.")
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        cid = engine.config.config_id
        assert engine.config.enabled == enabled
        engine.feed(app, [
            Ready(H200),
            BackendStatus(cid, Backend.CUDNN, "not_eligible", why),
            BackendStatus(cid, Backend.FLASH, "not_eligible", why),
            Dispatch(cid, None, priority_order=H200_ORDER_IN_FORCE, reason="No available kernel. Aborting execution."),
        ])
        await settle(pilot, until=lambda: "No available kernel" in widget_text(app, "#dispatch"))
        dispatch = widget_text(app, "#dispatch")
        assert "No available kernel" in dispatch
        assert "cuDNN: not eligible: Expected query, key and value" in dispatch
        assert "Flash: not eligible: Expected query, key and value" in dispatch
        # The disabled backend's line comes last and may be cut where the panel is short.
        assert "Math: flag off" in str(app.query_one("#dispatch").content)
        assert app.query_one("#panel-cudnn").has_class("-problem")
        assert "not eligible" in widget_text(app, "#panel-flash")


# ------------------------------------------------------------------ GPU panel
async def test_gpu_panel_says_why_a_field_is_na() -> None:
    app, engine, source = make_test_app(gpu=h200_processes_not_supported())
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, until=lambda: "Not Supported" in widget_text(app, "#gpu"))
        assert "n/a (Not Supported)" in widget_text(app, "#gpu")
        source.push(h200_power_not_supported())
        await settle(pilot, until=lambda: "power" in widget_text(app, "#gpu") and "others   none" in widget_text(app, "#gpu"))
        power = next(line for line in widget_text(app, "#gpu").splitlines() if "power" in line)
        assert "n/a (Not Supported)" in power


async def test_gpu_panel_shows_throttling_and_other_processes() -> None:
    app, engine, source = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, until=lambda: "others   none" in widget_text(app, "#gpu"))
        assert str(ENGINE_PID) not in widget_text(app, "#gpu")  # our own engine is no "other"
        source.push(h200_throttled())
        await settle(pilot, until=lambda: "SW power cap" in widget_text(app, "#gpu"))
        assert app.session.gpu_conditions == ("throttled",)
        source.push(h200_shared())
        await settle(pilot, until=lambda: "other process" in widget_text(app, "#gpu"))
        gpu = widget_text(app, "#gpu")
        assert "1 other process" in gpu and "31337 train.py" in gpu
        assert app.session.gpu_conditions == ("shared",)
        engine.feed_live(app, count=1)
        await settle(pilot)
        assert app.session.backends[Backend.CUDNN].history[-1].conditions == "shared"


# ------------------------------------------------------------------ terminal and exit
async def test_resizing_very_small_and_back_does_not_crash() -> None:
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        await pilot.resize_terminal(40, 12)
        await settle(pilot)
        assert app.size == (40, 12)
        assert screen_text(app).strip()
        await pilot.press("k")  # keys still work at that size
        await settle(pilot)
        assert engine.config.workload.mask == "causal"
        await pilot.resize_terminal(200, 60)
        engine.feed_live(app)
        await settle(pilot, until=lambda: "SDPA picks" in widget_text(app, "#dispatch"))
        assert app.size == (200, 60)
        assert CUDNN_SHORT in widget_text(app, "#panel-cudnn")
        assert app.is_running


async def test_q_quits_and_stops_the_engine_and_the_gpu_source() -> None:
    app, engine, source = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running
    assert engine.stopped
    assert source.stopped


async def test_a_tiny_terminal_gets_a_notice_and_recovers(tmp_path):
    """Below 60x16 the panels give way to a notice; measuring and the layout come back after."""
    app, engine, _ = make_test_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        engine.feed_live(app)
        await pilot.resize_terminal(40, 12)
        await settle(pilot)
        assert app.screen.has_class("-tiny")
        notice = widget_text(app, "#too-small")
        assert "The terminal is 40x12" in notice and "sdpa-tui report" in notice
        await pilot.resize_terminal(200, 60)
        await settle(pilot)
        assert not app.screen.has_class("-tiny")
        assert "cudnn_sdpa" in widget_text(app, "#panel-cudnn")


def fake_series(workloads, enabled, device, **options):
    """Stands in for measure_series: one Session per length, from the fake engine's records,
    with MATH out of memory from seq 16384 on (as it was on the H100, where it ran out at 32768).
    The options it was called with are kept in ``fake_series.options``."""
    from support.ui_fakes import H200, live_records

    from sdpa_tui.core.lab.session import Session
    from sdpa_tui.core.protocol.records import BackendStatus, Ready

    fake_series.options = options

    for workload in workloads:
        session = Session(workload, enabled)
        cid = session.next_config_id()
        session.apply(Ready(H200))
        for record in live_records(cid, enabled, count=6):
            session.apply(record)
        if workload.seq >= 16384 and Backend.MATH in enabled:
            session.apply(BackendStatus(cid, Backend.MATH, "oom", "needed 64.00 GiB more"))
        yield session


async def test_the_sweep_view_draws_the_series_and_resumes_live_measuring(tmp_path):
    app, engine, _ = make_test_app(tmp_path)
    app.measure_series = fake_series
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        engine.feed_live(app)
        await settle(pilot)
        await pilot.press("v")
        assert engine.paused[-1] is True
        await settle(pilot, until=lambda: app.screen.sweep.done)
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "32768" in text and "OOM" in text
        from sdpa_tui.core.sweep.sweep_lengths import TIMEOUT_PER_LENGTH_S
        assert fake_series.options["timeout_s"] == TIMEOUT_PER_LENGTH_S, \
            "a length that takes too long ends with its samples, as in `sdpa-tui sweep` (it waited 600 s)"
        app.screen.query_one("#sweep-body").scroll_end(animate=False)
        await pilot.pause(0.2)
        assert "Math runs out of memory at seq 16384" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert engine.paused[-1] is False


CPU_REASON = "cuDNN has no CPU implementation (on the CPU, SDPA has a flash kernel and MATH)"
TORCH_NO_KERNEL = "No available kernel. Aborting execution."


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_a_not_eligible_reason_is_shown_once_in_whole_words(size) -> None:
    """At 80x24 the reason was printed twice (status line and "torch says") and cut mid-sentence."""
    from sdpa_tui.core.protocol.records import Environment

    cpu = Environment(device="cpu", device_name="test CPU", torch_version="2.13.0+cpu", cpu_threads=2)
    app, engine, _ = make_test_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        cid = engine.config.config_id
        engine.feed(app, [Ready(cpu), BackendStatus(cid, Backend.CUDNN, "not_eligible", CPU_REASON,
                                                    (CPU_REASON, TORCH_NO_KERNEL))])
        await settle(pilot, until=lambda: "not eligible" in widget_text(app, "#panel-cudnn"))
        await settle(pilot)
        lines = [line.strip("│┃ ") for line in widget_text(app, "#panel-cudnn").splitlines()[1:-1]]
        words = " ".join(" ".join(lines).split())
        assert words.count("cuDNN has no CPU implementation") == 1, lines
        assert CPU_REASON in words, lines  # whole, wrapped at word boundaries
        assert "…" not in words.split(CPU_REASON)[0], lines  # nothing of the reason itself is cut
        if size == (120, 40):  # at 80x24 torch's own line is below the panel's last row: "…" says so
            assert words.count(TORCH_NO_KERNEL) == 1, lines
        else:
            assert words.endswith(f"{CPU_REASON} …"), lines


def test_reason_lines_wrap_in_whole_words_and_say_when_cut():
    from sdpa_tui.core.lab.session import Session
    from sdpa_tui.ui.widgets.backend_panel import reason_lines

    session = Session(Workload())
    state = session.backends[Backend.FLASH]
    state.status, state.reason = "not_eligible", "Expected query, key and value to all be of dtype: {Half, BFloat16}."
    state.details = (state.reason, TORCH_NO_KERNEL, TORCH_NO_KERNEL)
    whole = reason_lines(state, 30, 0).plain.splitlines()
    assert all(len(line) <= 30 for line in whole)
    assert " ".join(whole) == f"{state.reason} {TORCH_NO_KERNEL}"  # each once, every word whole
    cut = reason_lines(state, 30, 2).plain.splitlines()
    assert len(cut) == 2 and cut[-1].endswith(" …") and len(cut[-1]) <= 30
    assert " ".join(cut)[:-2] in state.reason
async def test_the_first_number_after_a_key_is_drawn_without_waiting_for_the_redraw_timer(monkeypatch) -> None:
    monkeypatch.setattr(app_module, "REDRAW_INTERVAL_S", 3600.0)  # only the immediate redraw can show it
    app, engine, _ = make_test_app()
    async with app.run_test(size=SIZE) as pilot:
        engine.feed(app, [Ready(H200)])
        await pilot.press("k")  # a new configuration
        await settle(pilot)
        cid = engine.config.config_id
        engine.feed(app, [BackendStatus(cid, Backend.CUDNN, "ok"), Sample(cid, Backend.CUDNN, gpu_us=9.7, eager_us=52.0)])
        await settle(pilot, until=lambda: "52.0 µs" in widget_text(app, "#panel-cudnn"))
        assert "52.0 µs" in widget_text(app, "#panel-cudnn")
        # each backend's first number too, not only the first of all
        engine.feed(app, [BackendStatus(cid, Backend.FLASH, "ok"), Sample(cid, Backend.FLASH, gpu_us=12.5, eager_us=61.0)])
        await settle(pilot, until=lambda: "61.0 µs" in widget_text(app, "#panel-flash"))
        assert "61.0 µs" in widget_text(app, "#panel-flash")
        # a later number of a backend waits for the tick (never, here)
        engine.feed(app, [Sample(cid, Backend.FLASH, gpu_us=12.5, eager_us=99.0)])
        await settle(pilot)
        assert "61.0 µs" in widget_text(app, "#panel-flash") and "99.0 µs" not in widget_text(app, "#panel-flash")


async def test_a_contended_host_cpu_is_said_in_the_header(monkeypatch) -> None:
    monkeypatch.setattr(app_module, "HOST_PRESSURE_EVERY_S", 0.05)
    app, engine, _ = make_test_app()
    app.host_pressure_source = lambda: 42.0
    async with app.run_test(size=SIZE) as pilot:
        await live(pilot, engine)
        await settle(pilot, until=lambda: "CONTENDED" in widget_text(app, "#header"))
        assert "CPU CONTENDED 42%: eager times read high" in widget_text(app, "#header")  # an H200 engine
        engine.feed_live(app, count=1)
        await settle(pilot)
        assert app.session.backends[Backend.CUDNN].history[-1].conditions.endswith("cpu-contended"), \
            "history.csv records the contention beside the sample (issue 21, item 5)"


@pytest.mark.parametrize("why", ["this torch build has no CUDA", "--device cpu"])
async def test_the_header_says_cpu_mode_and_why_first_at_80_columns(why) -> None:
    """At 80x24 the header showed "CPU: AMD EPYC, 1 thread · torch 2…": neither CPU MODE nor why."""
    cpu = Environment(device="cpu", device_name="AMD EPYC", torch_version="2.13.0+cpu", cpu_threads=1,
                      notes=(f"CPU mode: {why}",))
    app, engine, _ = make_test_app()
    async with app.run_test(size=(80, 24)) as pilot:
        engine.feed(app, [Ready(cpu)])
        await settle(pilot, until=lambda: "CPU MODE" in widget_text(app, "#header"))
        first = widget_text(app, "#header").splitlines()[0]
        assert f"CPU MODE ({why})" in first, first


async def test_a_shadowing_cudnn_is_said_first_in_the_header() -> None:
    """transformers#48163: a system cuDNN in place of the wheel's changed what SDPA ran, and nobody saw it."""
    from sdpa_tui.core.dispatch_environment import CudnnLoaded

    env = Environment(device="cuda:0", device_name="NVIDIA H100 80GB HBM3", torch_version="2.11.0", sm="9.0",
                      cudnn_loaded=CudnnLoaded("/usr/lib/libcudnn.so.9", "9.1.0", "9.19.0", "/w/libcudnn.so.9", True))
    app, engine, _ = make_test_app()
    async with app.run_test(size=(120, 30)) as pilot:
        engine.feed(app, [Ready(env)])
        await settle(pilot, until=lambda: "not the wheel's" in widget_text(app, "#header"))
        first = widget_text(app, "#header").splitlines()[0]
        assert "cuDNN 9.1.0 in use from /usr/lib/libcudnn.so.9, not the wheel's" in first, first


async def test_a_panel_draws_its_lines_again_at_a_new_size(monkeypatch) -> None:
    """Lines are cut to the panel's width: after a resize they follow it, without new data."""
    monkeypatch.setattr(app_module, "REDRAW_INTERVAL_S", 3600.0)  # no redraw tick can do it
    app, engine, _ = make_test_app()
    async with app.run_test(size=(100, 40)) as pilot:
        engine.feed_live(app)
        await settle(pilot, until=lambda: "SDPA picks" in widget_text(app, "#dispatch"))
        await settle(pilot)
        narrow = widget_text(app, "#panel-cudnn")
        lines = narrow.splitlines()  # too narrow for one line: speed, then memory and error, nothing cut
        speed = next(i for i, line in enumerate(lines) if "×MATH" in line)
        assert "mem" not in lines[speed] and "mem 1.0 MiB  err –" in lines[speed + 1], narrow
        await pilot.resize_terminal(180, 40)
        await pilot.pause()
        await pilot.pause()
        assert "×MATH  mem 1.0 MiB  err" in widget_text(app, "#panel-cudnn"), "wide: one line again"
