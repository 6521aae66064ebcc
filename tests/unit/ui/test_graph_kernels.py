"""Kernel identity from the CUDA graph's nodes: shown at once, untimed, until the profiler's burst measures it.

The graph kernels here are real: ``scripts/diagnostics/diag_graph_kernels.py`` read them on the H100 from one call of
each backend at [2, 8, 512, 64] fp16, beside torch.profiler's activities of the same call
(``tests/fixtures/graph_kernels_h100.json``).
"""

from __future__ import annotations

from support.graph_kernels import graph_kernels, profiled_kernels
from support.ui_fakes import H200, make_test_app, samples, settle, widget_text

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.records import BackendStatus, GraphKernels, KernelCapture, Ready
from sdpa_tui.core.protocol.wire_format import decode, encode
from sdpa_tui.core.traces import kernel_names
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.measuring.clocks import one_call


def test_the_graph_names_every_backends_main_kernel_as_the_profiler_does():
    for backend in Backend:
        graph, profiled = graph_kernels(backend), profiled_kernels(backend)
        assert sorted(k.name for k in graph) == sorted(k.name for k in profiled), backend
        main = kernel_names.main_kernel(graph)
        if backend is Backend.MATH:
            assert main.name in {k.name for k in profiled}, "MATH: a kernel of the call, untimed"
        else:
            assert main.name == kernel_names.main_kernel(profiled).name, backend
        same = next(k for k in profiled if k.name == main.name)
        assert (main.grid, main.block, main.shared_memory) == (same.grid, same.block, same.shared_memory)


def test_one_call_of_a_graph_of_identical_calls():
    call = graph_kernels(Backend.CUDNN)
    assert one_call(call * 3, 3) == call
    assert one_call(call * 3 + call[:1], 3) == (), "nodes that do not divide evenly are not guessed at"
    assert one_call((), 4) == ()


def test_graph_kernels_cross_the_wire_and_show_until_the_profiler_measures():
    record = GraphKernels(7, Backend.FLASH, graph_kernels(Backend.FLASH), 1.5)
    assert decode(encode(record)) == record
    session = Session(Workload(), tuple(Backend))
    session.next_config_id()
    record = GraphKernels(session.config_id, Backend.FLASH, graph_kernels(Backend.FLASH))
    assert session.apply(record)
    state = session.backends[Backend.FLASH]
    assert state.kernels_untimed and state.shown_kernels == record.kernels
    assert state.main_kernel is None, "the comparison and the exports read measured kernels only"
    assert next(r for r in session.rows() if r.backend is Backend.FLASH).main_kernel is None
    measured = profiled_kernels(Backend.FLASH)
    session.apply(KernelCapture(session.config_id, Backend.FLASH, measured, (25.0,)))
    assert not state.kernels_untimed and state.shown_kernels == measured
    state.clear_numbers()
    assert state.shown_kernels == ()


async def test_a_panel_names_the_graphs_kernels_untimed_then_the_measured_ones():
    app, engine, _ = make_test_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, until=lambda: engine.config is not None)
        cid = engine.config.config_id
        flash = graph_kernels(Backend.FLASH)
        engine.feed(app, [Ready(H200), BackendStatus(cid, Backend.FLASH, "ok"), *samples(cid, Backend.FLASH, 2),
                          GraphKernels(cid, Backend.FLASH, flash)])
        await settle(pilot, until=lambda: "from the CUDA graph" in widget_text(app, "#panel-flash"))
        text = widget_text(app, "#panel-flash")
        short = kernel_names.identify(kernel_names.main_kernel(flash).name).short
        assert short in text and "grid " in text
        engine.feed(app, [KernelCapture(cid, Backend.FLASH, profiled_kernels(Backend.FLASH), (25.0,))])
        await settle(pilot, until=lambda: "from the CUDA graph" not in widget_text(app, "#panel-flash"))
        assert short in widget_text(app, "#panel-flash")
