"""Snapshot exports: the files, never overwriting, and every write failure leaving nothing behind."""

from __future__ import annotations

import csv
import errno
import json
import os
import stat
import time
from pathlib import Path

import pytest

from sdpa_tui.core.backends import ALL_BACKENDS, Backend
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.records import (
    BackendStatus,
    Dispatch,
    Environment,
    KernelCapture,
    KernelInfo,
    Log,
    Ready,
    Sample,
)
from sdpa_tui.core.workload import Workload
from sdpa_tui.exports.files import durable_fs
from sdpa_tui.exports.lab import snapshot_folder as snap
from sdpa_tui.exports.lab.history_csv import HISTORY_COLUMNS
from sdpa_tui.exports.lab.report_data import SCHEMA_VERSION
from sdpa_tui.exports.lab.snapshot_folder import SnapshotError, SnapshotWriter, read_snapshot, write_snapshot
from sdpa_tui.telemetry.gpu_snapshot import GpuProcess, GpuSnapshot

FIXED_TIME = 1_700_000_000.0  # every snapshot of a test is taken "in the same second"
SAMPLES_PER_BACKEND = 5
KERNEL = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>(Flash_fwd_params)"


def make_session() -> Session:
    session = Session(Workload())
    session.apply(
        Ready(
            Environment(
                device="cuda:0",
                device_name="NVIDIA H100 80GB HBM3",
                torch_version="2.11.0",
                cuda_version="13.0",
                cudnn_version="9.19",
                sm="9.0",
                sm_count=132,
                memory_total_bytes=80 * 2**30,
                default_priority_order=("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH", "CUDNN_ATTENTION"),
            )
        )
    )
    cid = session.next_config_id()
    session.apply(Dispatch(cid, Backend.FLASH, ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH"), ""))
    session.apply(BackendStatus(cid, Backend.CUDNN, "not_eligible", "head dim too small", ("torch says so",)))
    base = {Backend.FLASH: 30.0, Backend.EFFICIENT: 45.0, Backend.MATH: 180.0}
    for backend, us in base.items():
        session.apply(BackendStatus(cid, backend, "ok"))
        session.apply(
            KernelCapture(cid, backend, (KernelInfo(KERNEL, us * 0.9, grid=(4, 8, 2), block=(128, 1, 1)),),
                          (us * 0.9, us * 0.91), peak_bytes=3 * 2**20)
        )
        for i in range(SAMPLES_PER_BACKEND):
            session.apply(Sample(cid, backend, gpu_us=us + i, eager_us=us + 10 + i, time=FIXED_TIME + i))
    session.apply(Log("UserWarning: a torch warning"))
    return session


SAMPLES_FED = 3 * SAMPLES_PER_BACKEND


def gpu_snapshot() -> GpuSnapshot:
    return GpuSnapshot(
        name="NVIDIA H100 80GB HBM3",
        sm_clock_mhz=1980,
        clock_event_reasons=("none",),
        processes=(GpuProcess(123, 2**30, "python"),),
        own_pids=frozenset({123}),
        time=FIXED_TIME,
        errors={"power_w": "Not Supported"},
    )


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch):
    monkeypatch.setattr(snap, "_clock", lambda: FIXED_TIME)


@pytest.fixture
def session() -> Session:
    return make_session()


def tree(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` with its content (to prove nothing changed)."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def entries(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


# -- the files ------------------------------------------------------------------------------
def test_files_present_and_parseable(tmp_path, session):
    writer = SnapshotWriter.begin(tmp_path)
    assert writer.staging_dir.parent == tmp_path
    assert writer.staging_dir.name.startswith(".snapshot-") and writer.staging_dir.name.endswith(".partial")
    for backend in (Backend.FLASH, Backend.MATH):  # what the engine does meanwhile
        writer.trace_path(backend).write_text(json.dumps({"traceEvents": []}))
    out = writer.finish(session, gpu=gpu_snapshot(), screen_svg="<svg>screen</svg>", extra={"note": "hi"})

    assert out.parent == tmp_path and out.name.startswith("snapshot-")
    assert entries(tmp_path) == [out.name]  # the staging directory became the snapshot
    assert not writer.staging_dir.exists()
    assert entries(out) == sorted(
        ["snapshot.json", "report.md", "history.csv", "screen.svg", "trace-FLASH_ATTENTION.json", "trace-MATH.json"]
    )
    doc = json.loads((out / "snapshot.json").read_text())
    assert doc["schema_version"] == SCHEMA_VERSION and doc["kind"] == "snapshot"
    assert doc["environment"]["device_name"] == "NVIDIA H100 80GB HBM3"
    assert doc["workload"] == Workload().to_dict()
    assert [b["backend"] for b in doc["backends"]] == [b.value for b in ALL_BACKENDS]
    flash = next(b for b in doc["backends"] if b["backend"] == "FLASH_ATTENTION")
    assert flash["gpu_us"] == 32.0 and flash["main_kernel"] == KERNEL
    assert doc["dispatch"]["choice"] == "FLASH_ATTENTION"
    assert doc["gpu"]["name"] == "NVIDIA H100 80GB HBM3" and doc["gpu"]["processes"][0]["pid"] == 123
    assert doc["gpu"]["errors"] == {"power_w": "Not Supported"}
    assert len(doc["history"]) == SAMPLES_FED
    assert set(doc["history"][0]) == set(HISTORY_COLUMNS)
    assert doc["logs"] == ["UserWarning: a torch warning"]
    assert doc["traces"] == ["trace-FLASH_ATTENTION.json", "trace-MATH.json"]
    assert doc["extra"] == {"note": "hi"}
    assert (out / "screen.svg").read_text() == "<svg>screen</svg>"
    assert json.loads((out / "trace-MATH.json").read_text()) == {"traceEvents": []}
    assert read_snapshot(out) == doc


def test_report_md_has_a_row_per_backend(tmp_path, session):
    out = write_snapshot(tmp_path, session)
    lines = (out / "report.md").read_text().splitlines()
    table = [line for line in lines if line.startswith("| ") and not line.startswith("| backend ")]
    assert len(table) == len(ALL_BACKENDS)
    for backend in ALL_BACKENDS:
        assert sum(line.startswith(f"| {backend.value} |") for line in table) == 1
    assert not (out / "screen.svg").exists()  # none given
    assert read_snapshot(out)["gpu"] is None


def test_history_csv_rows_equal_samples_fed(tmp_path, session):
    out = write_snapshot(tmp_path, session)
    with open(out / "history.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == HISTORY_COLUMNS
    assert len(rows) - 1 == SAMPLES_FED
    data = [dict(zip(rows[0], r)) for r in rows[1:]]
    assert {d["backend"] for d in data} == {"FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH"}
    assert all(float(d["eager_us"]) > 0 and d["config_id"] == "1" for d in data)
    assert sorted(float(d["time"]) for d in data) == [float(d["time"]) for d in data]


def test_empty_session_still_writes(tmp_path):
    out = write_snapshot(tmp_path, Session(Workload()))
    doc = read_snapshot(out)
    assert doc["environment"] is None and doc["history"] == [] and doc["traces"] == []
    assert (out / "history.csv").read_text().strip() == ",".join(HISTORY_COLUMNS)


# -- never overwriting ------------------------------------------------------------------------
def test_two_snapshots_in_one_second_get_distinct_directories(tmp_path, session):
    first = write_snapshot(tmp_path, session)
    before = tree(first)
    session.apply(Sample(session.config_id, Backend.MATH, gpu_us=1.0, eager_us=2.0, time=FIXED_TIME + 99))
    second = write_snapshot(tmp_path, session)
    third = write_snapshot(tmp_path, session)
    assert first != second != third
    assert second.name == first.name + "-2" and third.name == first.name + "-3"
    assert tree(first) == before  # the first is unchanged
    assert len(read_snapshot(second)["history"]) == SAMPLES_FED + 1
    assert entries(tmp_path) == sorted([first.name, second.name, third.name])


@pytest.mark.parametrize("occupant", ["non-empty directory", "empty directory", "file"])
def test_name_taken_meanwhile_takes_next_suffix(tmp_path, session, monkeypatch, occupant):
    """The name did not exist when checked but appears before the rename: never replaced."""
    stem = "snapshot-" + time.strftime("%Y%m%d-%H%M%S", time.localtime(FIXED_TIME))
    taken = tmp_path / stem
    if occupant == "file":
        taken.write_text("someone else's")
    else:
        taken.mkdir()
        if occupant == "non-empty directory":
            (taken / "theirs.txt").write_text("someone else's")
    before = tree(tmp_path)
    monkeypatch.setattr(snap.os.path, "lexists", lambda p: False)  # the check races and loses
    out = write_snapshot(tmp_path, session)
    assert out.name == stem + "-2"
    assert tree(tmp_path)  # still there
    assert {k: v for k, v in tree(tmp_path).items() if not k.startswith(out.name)} == before
    assert taken.exists() and (taken.is_dir() == (occupant != "file"))
    if occupant == "empty directory":
        assert entries(taken) == []


def test_rename_fallback_without_renameat2(tmp_path, session, monkeypatch):
    monkeypatch.setattr(durable_fs, "_renameat2", False)
    first = write_snapshot(tmp_path, session)
    taken = tmp_path / (first.name + "-2")
    taken.mkdir()
    (taken / "theirs.txt").write_text("x")
    monkeypatch.setattr(snap.os.path, "lexists", lambda p: False)
    out = write_snapshot(tmp_path, session)
    assert out.name == first.name + "-3"
    assert entries(taken) == ["theirs.txt"] and read_snapshot(first)["kind"] == "snapshot"


# -- where it goes ----------------------------------------------------------------------------
def test_missing_base_dir_is_created(tmp_path, session):
    base = tmp_path / "a" / "b" / "snapshots"
    out = write_snapshot(base, session)
    assert base.is_dir() and out.parent == base
    assert read_snapshot(out)["kind"] == "snapshot"


def test_abort_removes_staging(tmp_path):
    writer = SnapshotWriter.begin(tmp_path)
    writer.trace_path("MATH").write_text("{}")
    assert writer.active
    writer.abort()
    writer.abort()  # idempotent
    assert entries(tmp_path) == [] and not writer.active


def test_context_manager_aborts_unfinished(tmp_path, session):
    with pytest.raises(RuntimeError):
        with SnapshotWriter.begin(tmp_path) as writer:
            writer.trace_path(Backend.FLASH).write_text("{}")
            raise RuntimeError("engine died")
    assert entries(tmp_path) == []
    with SnapshotWriter.begin(tmp_path) as writer:
        out = writer.finish(session)
    assert entries(tmp_path) == [out.name]  # a finished snapshot is kept
    with pytest.raises(SnapshotError, match="already written"):
        writer.finish(session)


# -- write failures: plain words, nothing left, data still there --------------------------------
def test_base_dir_under_a_regular_file(tmp_path, session):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("just a file")
    for base in (blocker / "snapshots", blocker):
        with pytest.raises(SnapshotError) as info:
            write_snapshot(base, session)
        assert str(info.value) == f"cannot write snapshot to {base}: Not a directory"
    assert entries(tmp_path) == ["not-a-dir"] and blocker.read_text() == "just a file"


def test_read_only_base_dir(tmp_path, session):
    base = tmp_path / "ro"
    base.mkdir()
    base.chmod(0o500)
    try:
        if os.access(base, os.W_OK):
            pytest.skip("running as root: chmod does not stop writes (see the regular-file test)")
        with pytest.raises(SnapshotError) as info:
            write_snapshot(base, session)
        assert str(info.value) == f"cannot write snapshot to {base}: Permission denied"
        assert entries(base) == []
    finally:
        base.chmod(stat.S_IRWXU)
    assert len(session.history()) == SAMPLES_FED


def test_disk_full_leaves_nothing_and_retry_succeeds(tmp_path, session, monkeypatch):
    real_write = snap.write_file

    def full_disk(path, text, newline=None):
        if Path(path).name == "history.csv":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_write(path, text, newline)

    writer = SnapshotWriter.begin(tmp_path)
    writer.trace_path(Backend.MATH).write_text("{}")
    monkeypatch.setattr(snap, "write_file", full_disk)
    with pytest.raises(SnapshotError, match="No space left") as info:
        writer.finish(session, screen_svg="<svg/>")
    assert str(info.value) == f"cannot write snapshot to {tmp_path}: No space left on device"
    assert not writer.staging_dir.exists()
    assert entries(tmp_path) == []  # no partial files, not even hidden ones
    assert len(session.history()) == SAMPLES_FED  # the data is still in memory

    monkeypatch.setattr(snap, "write_file", real_write)  # space freed: the user retries
    out = write_snapshot(tmp_path, session, screen_svg="<svg/>")
    assert entries(tmp_path) == [out.name]
    assert len(read_snapshot(out)["history"]) == SAMPLES_FED


def test_failure_at_rename_leaves_nothing(tmp_path, session, monkeypatch):
    def no_rename(src, dst):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(dst))

    monkeypatch.setattr(snap, "rename_noreplace", no_rename)
    with pytest.raises(SnapshotError, match="Permission denied"):
        write_snapshot(tmp_path, session)
    assert entries(tmp_path) == []


def test_non_os_error_also_cleans_up(tmp_path, session, monkeypatch):
    monkeypatch.setattr(snap, "markdown_report", lambda s: 1 / 0)
    writer = SnapshotWriter.begin(tmp_path)
    with pytest.raises(ZeroDivisionError):
        writer.finish(session)
    assert entries(tmp_path) == []


def test_staging_removed_underneath(tmp_path, session):
    writer = SnapshotWriter.begin(tmp_path)
    writer.staging_dir.rmdir()
    with pytest.raises(SnapshotError, match="cannot write snapshot to"):
        writer.finish(session)
    assert entries(tmp_path) == []


# -- reading back -------------------------------------------------------------------------------
def test_read_snapshot_round_trip(tmp_path, session):
    out = write_snapshot(tmp_path, session, gpu=gpu_snapshot())
    doc = read_snapshot(out)
    assert doc == read_snapshot(out / "snapshot.json")
    assert doc["workload"] == session.workload.to_dict()
    assert [r["eager_us"] for r in doc["history"]] == [r.eager_us for r in session.history()]
    assert doc["gpu"]["own_pids"] == [123]


def test_read_snapshot_missing(tmp_path):
    with pytest.raises(SnapshotError, match="no snapshot: .* has no snapshot.json"):
        read_snapshot(tmp_path)
    with pytest.raises(SnapshotError, match="does not exist"):
        read_snapshot(tmp_path / "nowhere" / "snapshot.json")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON: .* line 1, column 2"),
        ("", "is not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"kind": "snapshot"}', "schema_version is missing"),
        ('{"kind": "snapshot", "schema_version": "1"}', "schema_version is '1'"),
        ('{"kind": "snapshot", "schema_version": true}', "schema_version is True"),
        ('{"kind": "snapshot", "schema_version": 999}', "schema version 999; this sdpa-tui reads versions 1 and 2"),
        (json.dumps({"schema_version": SCHEMA_VERSION}), "kind is None, expected 'snapshot'"),
        (json.dumps({"schema_version": SCHEMA_VERSION, "kind": "report"}), "kind is 'report'"),
    ],
)
def test_read_snapshot_rejects(tmp_path, content, message):
    (tmp_path / "snapshot.json").write_text(content)
    with pytest.raises(SnapshotError, match=message):
        read_snapshot(tmp_path)


def test_read_snapshot_not_utf8(tmp_path):
    (tmp_path / "snapshot.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(SnapshotError, match="not UTF-8"):
        read_snapshot(tmp_path)
