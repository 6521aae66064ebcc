"""The report's JSON document, Markdown table and terminal table, from a session fed with records.

Kernels come from the real H200 traces in fixtures; the timings are made-up test inputs.
"""

from __future__ import annotations

import io
import json
import os
import stat
import statistics

import pytest
from rich.console import Console
from support import paths
from support.real_data import fixture_kernels, session_from_report

from sdpa_tui.core.backends import ALL_BACKENDS, Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.records import BackendStatus, Dispatch, Environment, KernelCapture, Ready, Sample
from sdpa_tui.core.traces.kernel_names import main_kernel
from sdpa_tui.core.traces.kernel_short_names import short_name
from sdpa_tui.core.workload import Workload
from sdpa_tui.exports.files.atomic import write_text_atomic
from sdpa_tui.exports.lab.report_data import SCHEMA_VERSION, report_dict
from sdpa_tui.exports.lab.report_tables import markdown_report, rich_report

REPORTS = sorted((paths.REPORTS).glob("*/report-*.json"))


KERNELS = {
    Backend.CUDNN: fixture_kernels("CUDNN_ATTENTION.json"),
    Backend.FLASH: fixture_kernels("FLASH_ATTENTION.json"),
    Backend.EFFICIENT: fixture_kernels("EFFICIENT_ATTENTION.json"),
}

# ---- test inputs (plausible H200 numbers, not measurements) ----
TEST_GPU_US = {
    Backend.CUDNN: [9.7, 9.8, 9.6, 9.9, 10.1],
    Backend.FLASH: [14.3, 14.2, 14.6, 14.4, 14.1],
    Backend.EFFICIENT: [23.2, 23.4, 23.1, 23.9, 23.3],
    Backend.MATH: [114.2, 113.9, 115.0, 117.3, 114.6],
}
TEST_EAGER_US = {
    Backend.CUDNN: [52.1, 51.7, 53.0, 52.4, 55.2],
    Backend.FLASH: [65.3, 64.8, 66.1, 65.0, 70.2],
    Backend.EFFICIENT: [34.2, 33.9, 34.8, 35.1, 34.0],
    Backend.MATH: [377.0, 380.4, 375.2, 379.9, 391.0],
}
TEST_PEAK_BYTES = {Backend.CUDNN: 2 << 20, Backend.FLASH: 3 << 20, Backend.EFFICIENT: 5 << 20}
TEST_ENV = Environment(
    device="cuda:0", device_name="NVIDIA H200", torch_version="2.11.0+cu130", cuda_version="13.0",
    cudnn_version="9.19.0", sm="9.0", sm_count=132, memory_total_bytes=150_754_820_096, l2_bytes=62_914_560,
    default_priority_order=("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH", "CUDNN_ATTENTION"),
)
ORDER_IN_FORCE = ("CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH")


def filled_session() -> Session:
    session = Session(Workload())
    cid = session.next_config_id()
    session.apply(Ready(TEST_ENV))
    session.apply(Dispatch(cid, Backend.CUDNN, ORDER_IN_FORCE))
    for backend in ALL_BACKENDS:
        session.apply(BackendStatus(cid, backend, "ok"))
        kernels = KERNELS.get(backend, ())
        if kernels:
            per_call = sum(k.duration_us for k in kernels)
            session.apply(KernelCapture(cid, backend, kernels, (per_call, per_call * 1.01), TEST_PEAK_BYTES[backend]))
        for i, (g, e) in enumerate(zip(TEST_GPU_US[backend], TEST_EAGER_US[backend])):
            session.apply(Sample(cid, backend, g, e, "graph", 16, 1_763_765_000.0 + i))
    return session


def fp32_session() -> Session:
    """The fp32 case: FLASH and cuDNN not eligible, with torch's long reasons; MATH without a capture."""
    session = Session(Workload(dtype="fp32"))
    cid = session.next_config_id()
    session.apply(Ready(TEST_ENV))
    session.apply(Dispatch(cid, Backend.EFFICIENT, ORDER_IN_FORCE))
    reason = "Expected query, key and value to all be of dtype: {Half, BFloat16}. Got Query dtype: float, Key dtype: float, and Value dtype: float instead."
    for backend in (Backend.CUDNN, Backend.FLASH):
        session.apply(BackendStatus(cid, backend, "not_eligible", reason, (reason, "No available kernel. Aborting execution.")))
    session.apply(BackendStatus(cid, Backend.EFFICIENT, "ok"))
    session.apply(KernelCapture(cid, Backend.EFFICIENT, fixture_kernels("DEFAULT_fp32.json"), (55.9,), 4 << 20))
    session.apply(BackendStatus(cid, Backend.MATH, "ok"))
    for i in range(5):
        session.apply(Sample(cid, Backend.EFFICIENT, 57.0 + i, 80.0 + i, "graph", 8, 1.0 + i))
        session.apply(Sample(cid, Backend.MATH, 1_234.5 + i, 14_321.0 + 10 * i, "graph", 2, 1.0 + i))
    return session


SESSIONS = [filled_session, fp32_session] + [
    (lambda path=path: session_from_report(path)) for path in REPORTS
]
SESSION_IDS = ["fp16", "fp32"] + [f"{p.parent.name}/{p.stem}" for p in REPORTS]


@pytest.fixture
def session() -> Session:
    return filled_session()


REQUIRED_BACKEND_KEYS = {"backend", "status", "reason", "kernel_us", "gpu_us", "eager_us", "kernels", "main_kernel",
                         "peak_mib"}
REQUIRED_KERNEL_KEYS = {"name", "duration_us", "grid", "block", "shared_memory", "registers"}


def test_report_dict_schema(session):
    doc = json.loads(json.dumps(report_dict(session)))  # JSON-able, and read back as a reader would
    assert doc["schema_version"] == SCHEMA_VERSION
    assert doc["environment"]["device_name"] == TEST_ENV.device_name
    assert doc["environment"]["sm"] == TEST_ENV.sm
    assert doc["workload"] == Workload().to_dict()
    assert Workload.from_dict(doc["workload"]) == session.workload
    assert [b["backend"] for b in doc["backends"]] == [b.value for b in ALL_BACKENDS]
    for entry in doc["backends"]:
        assert REQUIRED_BACKEND_KEYS <= set(entry), REQUIRED_BACKEND_KEYS - set(entry)
        for kernel in entry["kernels"]:
            assert REQUIRED_KERNEL_KEYS <= set(kernel)
    assert {"choice", "priority_order", "reason"} <= set(doc["dispatch"])
    assert doc["dispatch"]["choice"] == "CUDNN_ATTENTION"
    assert doc["dispatch"]["priority_order"] == list(ORDER_IN_FORCE)
    # two orders, named for what each is: torch's default before the first call, and the one used
    assert "priority_order" not in doc["environment"]
    assert doc["environment"]["default_priority_order"] == list(TEST_ENV.default_priority_order)


def test_report_dict_values_come_from_the_records(session):
    doc = json.loads(json.dumps(report_dict(session)))
    entries = {Backend(e["backend"]): e for e in doc["backends"]}
    for backend in ALL_BACKENDS:
        entry = entries[backend]
        assert entry["status"] == "ok" and entry["reason"] == ""
        assert entry["gpu_us"] == pytest.approx(statistics.median(TEST_GPU_US[backend]))
        assert entry["eager_us"] == pytest.approx(statistics.median(TEST_EAGER_US[backend]))
        if backend in KERNELS:  # the peak comes with a kernel capture
            assert entry["peak_mib"] == pytest.approx(TEST_PEAK_BYTES[backend] / 2**20)
    for backend, kernels in KERNELS.items():
        entry = entries[backend]
        per_call = sum(k.duration_us for k in kernels)
        assert entry["kernel_us"] == pytest.approx(statistics.median([per_call, per_call * 1.01]))
        assert entry["main_kernel"] == main_kernel(kernels).name
        assert [k["name"] for k in entry["kernels"]] == [k.name for k in kernels]
        for written, original in zip(entry["kernels"], kernels):
            assert written["duration_us"] == original.duration_us
            assert written["grid"] == (list(original.grid) if original.grid else None)
            assert written["block"] == (list(original.block) if original.block else None)
            assert written["shared_memory"] == original.shared_memory
            assert written["registers"] == original.registers
    # MATH got no kernel capture: no kernels, no main kernel, no kernel clock
    assert entries[Backend.MATH]["kernels"] == [] and entries[Backend.MATH]["main_kernel"] is None
    assert entries[Backend.MATH]["kernel_us"] is None and entries[Backend.MATH]["peak_mib"] is None
    assert doc["dispatch"]["gpu_us"] == pytest.approx(statistics.median(TEST_GPU_US[Backend.CUDNN]))


def test_report_dict_of_a_session_before_the_engine_answered():
    doc = json.loads(json.dumps(report_dict(Session(Workload(), (Backend.MATH,)))))
    assert doc["environment"] is None
    assert doc["dispatch"]["choice"] is None
    statuses = {e["backend"]: e["status"] for e in doc["backends"]}
    assert statuses == {"CUDNN_ATTENTION": "disabled", "FLASH_ATTENTION": "disabled",
                        "EFFICIENT_ATTENTION": "disabled", "MATH": "waiting"}


def test_report_dict_not_eligible_reasons():
    doc = json.loads(json.dumps(report_dict(fp32_session())))
    entries = {e["backend"]: e for e in doc["backends"]}
    for name in ("CUDNN_ATTENTION", "FLASH_ATTENTION"):
        assert entries[name]["status"] == "not_eligible"
        assert "dtype" in entries[name]["reason"]
        assert entries[name]["gpu_us"] is None and entries[name]["kernels"] == []
    assert entries["EFFICIENT_ATTENTION"]["status"] == "ok"


def table_rows(markdown: str) -> list[list[str]]:
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    header, separator, *rows = lines
    assert set(separator) <= set("|-: ")
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


@pytest.mark.parametrize("make", SESSIONS, ids=SESSION_IDS)
def test_markdown_has_one_row_per_backend_and_the_main_kernels(make):
    session = make()
    markdown = markdown_report(session)
    rows = table_rows(markdown)
    assert [row[0] for row in rows] == [b.value for b in ALL_BACKENDS]
    header = [c.strip() for c in next(line for line in markdown.splitlines() if line.startswith("|")).strip("|").split("|")]
    assert all(len(row) == len(header) for row in rows)
    for state in session.backends.values():
        if state.main_kernel is not None:
            assert short_name(state.main_kernel.name) in markdown
    assert session.workload.describe() in markdown


def test_markdown_numbers_are_the_medians(session):
    rows = {row[0]: row for row in table_rows(markdown_report(session))}
    for backend in ALL_BACKENDS:
        row = rows[backend.value]
        assert f"{statistics.median(TEST_GPU_US[backend]):,.1f}" in row
        assert f"{statistics.median(TEST_EAGER_US[backend]):,.1f}" in row


WIDTHS = (80, 100, 120, 140, 160, 200)


@pytest.mark.parametrize("path", REPORTS, ids=[p.stem for p in REPORTS])
def test_a_replayed_real_report_gives_the_same_numbers(path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    again = json.loads(json.dumps(report_dict(session_from_report(path))))
    assert again["workload"] == doc["workload"] and again["dispatch"]["choice"] == doc["dispatch"]["choice"]
    for old, new in zip(doc["backends"], again["backends"]):
        assert (new["backend"], new["status"], new["main_kernel"]) == (old["backend"], old["status"], old["main_kernel"])
        for key in ("gpu_us", "eager_us", "kernel_us", "peak_mib"):
            assert new[key] == pytest.approx(old[key], rel=1e-6), (old["backend"], key)


def render(session: Session, width: int) -> str:
    console = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    console.print(rich_report(session, width))
    return console.export_text()


@pytest.mark.parametrize("make", SESSIONS, ids=SESSION_IDS)
@pytest.mark.parametrize("width", WIDTHS)
def test_rich_report_fits_the_width(make, width):
    text = render(make(), width)
    too_long = [line for line in text.splitlines() if len(line.rstrip()) > width]
    assert not too_long, too_long
    assert "SDPA backends" in text


@pytest.mark.parametrize("make", SESSIONS, ids=SESSION_IDS)
@pytest.mark.parametrize("width", WIDTHS)
def test_rich_report_never_cuts_a_number(make, width):
    """Whatever the width, the medians are printed whole; only the kernel name may be shortened or moved."""
    session = make()
    text = render(session, width)
    for row in session.rows():
        for summary in (row.gpu_us, row.eager_us):
            if summary is not None:
                value = summary.median
                expected = f"{value:,.1f}" if value < 10_000 else f"{value:,.0f}"
                assert expected in text, (width, row.backend, expected)


@pytest.mark.parametrize("width", WIDTHS)
def test_rich_report_names_every_backend_and_main_kernel(session, width):
    text = render(session, width)
    for backend in ALL_BACKENDS:
        assert backend.label in text or backend.short in text
    # each main kernel is shown, maybe cut with an ellipsis, but at least its first 16 characters
    for backend in KERNELS:
        name = short_name(session.backends[backend].main_kernel.name)
        assert name[:16] in text, (width, name)
    assert "CUDNN_ATTENTION" in text  # the dispatch line


def test_not_eligible_reasons_are_shown():
    text = render(fp32_session(), 160)
    assert "Expected query, key and value" in text


def test_write_text_atomic(tmp_path, session):
    path = tmp_path / "report.md"
    write_text_atomic(path, markdown_report(session))
    assert path.read_text(encoding="utf-8") == markdown_report(session)
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temporary file left behind
    with pytest.raises(OSError):
        write_text_atomic(tmp_path / "missing-dir" / "report.md", "x")


def test_write_text_atomic_gives_the_file_the_usual_mode(tmp_path):
    """It kept mkstemp's 0600: a report written for colleagues was readable by its owner only."""
    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "r.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o644


def clocked_session(kernel_mhz: int, gpu_mhz: int) -> Session:
    """Mem-efficient's kernels timed at ``kernel_mhz`` and its GPU/call at ``gpu_mhz`` (NVML's SM clock), GPU/call
    below the kernel clock (21.5 against 22.1 µs, as issue 39 saw it on an H100)."""
    session = Session(Workload())
    cid = session.next_config_id()
    session.apply(Ready(TEST_ENV))
    session.apply(BackendStatus(cid, Backend.EFFICIENT, "ok"))
    session.apply(KernelCapture(cid, Backend.EFFICIENT, KERNELS[Backend.EFFICIENT], (22.1, 22.2), sm_mhz=kernel_mhz))
    for i in range(5):
        session.apply(Sample(cid, Backend.EFFICIENT, 21.5, 23.0, "graph", 64, 1.0 + i, sm_mhz=gpu_mhz + i))
    return session


def test_the_sm_clocks_each_gpu_time_was_taken_at_are_in_the_json_and_named_when_they_explain_a_difference():
    slow_kernels = clocked_session(kernel_mhz=1_755, gpu_mhz=1_978)
    efficient = next(b for b in report_dict(slow_kernels)["backends"] if b["backend"] == "EFFICIENT_ATTENTION")
    assert efficient["sm_mhz"] == {"gpu": 1_980, "kernel": 1_755}
    text = render(slow_kernels, 140)
    assert "Mem-efficient: GPU/call below the kernel clock: the kernels were timed at 1,755 MHz, GPU/call at 1,980" in text
    assert "SM clock while timing (NVML, median): Mem-efficient GPU/call 1,980, kernel 1,755 MHz" in text
    steady = render(clocked_session(kernel_mhz=1_980, gpu_mhz=1_978), 140)
    assert "SM clock" not in steady and "below the kernel clock" not in steady
