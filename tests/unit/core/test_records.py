"""The records crossing the process boundary: JSON round trips, and refusal of anything else."""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.graph_kernels import graph_kernels
from support.real_data import H200, H200_ORDER_IN_FORCE, fixture_kernels

from sdpa_tui.core.backends import ALL_BACKENDS, Backend
from sdpa_tui.core.dispatch_environment import CudnnLoaded, FlashImpl
from sdpa_tui.core.protocol.engine_commands import CaptureKernels, CaptureTraces, Configure, SetPaused, Shutdown
from sdpa_tui.core.protocol.records import (
    Accuracy,
    BackendStatus,
    Dispatch,
    EngineError,
    EngineHealth,
    Environment,
    GraphKernels,
    KernelCapture,
    KernelInfo,
    Log,
    PeakFlops,
    Ready,
    Recycling,
    Sample,
    StartupTimes,
    TracesCaptured,
)
from sdpa_tui.core.protocol.wire_format import PROTOCOL_VERSION, RECORD_TYPES, ProtocolError, decode, encode
from sdpa_tui.core.workload import Workload

FLASH_KERNELS = fixture_kernels("FLASH_ATTENTION.json")
CUDNN_KERNELS = fixture_kernels("CUDNN_ATTENTION.json")

CPU = Environment(device="cpu", device_name="test CPU", torch_version="2.13.0+cpu", cpu_threads=2)
SHADOWED = Environment(  # what decides dispatch beyond the versions (core/dispatch_environment.py)
    device="cuda:0", device_name="NVIDIA H100 80GB HBM3", torch_version="2.11.0+cu130", sm="9.0",
    cudnn_loaded=CudnnLoaded("/usr/lib/libcudnn.so.9", "9.1.0", "9.19.0", "/w/libcudnn.so.9", True, ("/w/libcudnn.so.9",)),
    flash_impl=FlashImpl("FA3", ("FA3", "FA4")), sdp_flags={"flash": False, "deterministic": True},
    sdpa_env={"TORCH_CUDNN_SDPA_DEPRIORITIZED": "1"})
GQA = Workload(batch=1, heads=16, kv_heads=4, seq=8192, kv_seq=4096, head_dim=128, dtype="bf16", mask="causal",
               direction="fwd+bwd")

RECORDS = [
    Configure(7, GQA, (Backend.CUDNN, Backend.MATH), profile_every_s=2.5, profile_every_max_s=40.0,
              sample_interval_s=0.25, recycle_growth_mib=1024.0),
    Configure(1, Workload(), ALL_BACKENDS),
    Configure(2, Workload(), ()),
    SetPaused(True),
    SetPaused(False),
    CaptureTraces(3, "/tmp/sdpa-tui exports/trace dir"),
    Shutdown(),
    Ready(H200),
    Ready(CPU),
    BackendStatus(7, Backend.FLASH, "ok"),
    BackendStatus(
        7, Backend.FLASH, "not_eligible", "Flash attention only supports fp16 and bf16",
        ("Flash attention kernel not used because:", "Flash attention only supports fp16 and bf16",
         "No available kernel. Aborting execution."),
    ),
    BackendStatus(8, Backend.MATH, "oom", "out of memory: needed 9.70 GiB more", ("CUDA out of memory. Tried …",)),
    Sample(7, Backend.CUDNN, 9.734, 52.125, "graph", 64, 1_763_765_000.123),
    Sample(7, Backend.MATH, None, 23_885.4, "none", 3, 1_763_765_001.5),
    KernelCapture(7, Backend.FLASH, FLASH_KERNELS, (12.61, 12.58, 12.9), 33_554_432, 1_763_765_002.0),
    KernelCapture(7, Backend.CUDNN, CUDNN_KERNELS, (8.4,), None),
    KernelCapture(7, Backend.MATH, (KernelInfo("aten::bmm", 812.5, "cpu_op"),), (1_000.0,)),
    KernelCapture(7, Backend.EFFICIENT, (), ()),
    GraphKernels(7, Backend.CUDNN, graph_kernels(Backend.CUDNN), 1_763_765_002.5),  # names, no times (the H100's)
    KernelCapture(7, Backend.MATH, (), (), None, 1_763_765_003.0, "the profiler process was killed by SIGKILL"),
    CaptureKernels(7, Workload(), Backend.CUDNN, 10, "/tmp/trace-CUDNN_ATTENTION.json"),
    EngineHealth(1_290.5, 0, 4242),
    EngineHealth(None, 0),
    StartupTimes(("interpreter", "import_torch"), (0.3, 2.5), 1234.5, False),
    Dispatch(7, Backend.CUDNN, H200_ORDER_IN_FORCE),
    Dispatch(9, None, (), "every backend flag is off"),
    Dispatch(10, Backend.CUDNN, H200_ORDER_IN_FORCE, "", (Backend.CUDNN, Backend.MATH),
             "legacy API: torch.backends.cuda.sdp_kernel(...) never touches the cuDNN flag"),
    Configure(11, Workload(), (Backend.MATH,), legacy_api=True),
    Recycling(2_531.5, 1_147.25),
    Configure(12, Workload(), ALL_BACKENDS, priority=(Backend.FLASH, Backend.CUDNN)),
    BackendStatus(12, Backend.EFFICIENT, "ok", measured=False),
    Sample(7, Backend.MATH, 26_012.5, 26_480.0, "graph", 1, 1_763_765_001.75, busy_s=0.0525),
    PeakFlops("bf16", 742.5, "8192x8192x8192 bf16 matmul"),
    Accuracy(12, Backend.FLASH, 0.00048828125, 0.00021, "forward output vs float64 MATH"),
    Accuracy(12, Backend.MATH, None, None, "the float64 reference does not fit in memory"),
    TracesCaptured(3, ("/tmp/a/trace-CUDNN_ATTENTION.json", "/tmp/a/trace-MATH.json")),
    TracesCaptured(4, (), "MATH: [Errno 28] No space left on device"),
    Log("UserWarning: Flash attention kernel not used because: ✓ unicode ok"),
    EngineError("CUDA context poisoned: an illegal memory access was encountered", fatal=True),
    EngineError("MATH: something odd"),
    Ready(SHADOWED),  # last: tests index the records above by position
    Accuracy(7, Backend.CUDNN, 1e-3, 1e-3, "fwd", (1e-3, 2e-3, 3e-3), (1e-3, 2e-3, 3e-3), ("dq",)),
]


def test_the_fixture_kernels_carry_launch_details():
    main = max((k for k in FLASH_KERNELS if k.category == "kernel"), key=lambda k: k.duration_us)
    assert main.grid and main.block and main.registers and main.shared_memory is not None


def test_every_record_type_is_covered():
    assert {type(r) for r in RECORDS} == set(RECORD_TYPES.values())


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_round_trip(record):
    data = encode(record)
    back = decode(data)
    assert type(back) is type(record)
    assert back == record
    assert hash(back) == hash(record)  # frozen, plain values (tuples, not lists)


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_encoded_bytes_are_json_with_type_and_version(record):
    data = encode(record)
    assert isinstance(data, bytes)
    assert not data.startswith(b"\x80")  # a pickle would start with the PROTO opcode
    message = json.loads(data)
    assert message["type"] == record.TYPE
    assert message["v"] == PROTOCOL_VERSION
    assert isinstance(message["body"], dict)


def test_enums_and_nested_records_become_plain_json():
    message = json.loads(encode(RECORDS[0]))
    body = message["body"]
    assert body["enabled"] == ["CUDNN_ATTENTION", "MATH"]
    assert body["workload"] == GQA.to_dict()
    kernels = json.loads(encode(RECORDS[14]))["body"]["kernels"]
    assert kernels[0]["grid"] == list(FLASH_KERNELS[0].grid)


def test_decoded_types_are_restored():
    capture = decode(encode(RECORDS[14]))
    assert capture.backend is Backend.FLASH
    assert all(isinstance(k, KernelInfo) for k in capture.kernels)
    assert all(isinstance(k.grid, tuple) for k in capture.kernels if k.grid is not None)
    config = decode(encode(RECORDS[0]))
    assert isinstance(config.workload, Workload) and config.enabled == (Backend.CUDNN, Backend.MATH)
    ready = decode(encode(Ready(H200)))
    assert isinstance(ready.environment, Environment) and not ready.environment.is_cpu
    assert decode(encode(Ready(CPU))).environment.is_cpu


def _message(**overrides) -> bytes:
    message = json.loads(encode(Sample(1, Backend.MATH, None, 10.0)))
    message.update(overrides)
    return json.dumps(message).encode()


def test_another_protocol_version_is_refused():
    for version in (PROTOCOL_VERSION + 1, 0, "1", None):
        with pytest.raises(ProtocolError, match="version"):
            decode(_message(v=version))


def test_unknown_record_type_is_refused():
    with pytest.raises(ProtocolError, match="unknown record type"):
        decode(_message(type="tensor"))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x80\x04\x95",  # the start of a pickle
        pickle.dumps(Sample(1, Backend.MATH, None, 10.0)),
        b"not json at all",
        b"\xff\xfe\x00garbage",
        b"null",
        b"[]",
        b"42",
        b'"sample"',
        b'{"type": "sample", "v": 1}',  # no body
        b'{"v": 1, "body": {}}',  # no type
        b'{"type": ["sample"], "v": 1, "body": {}}',  # type not a string
        b'{"type": {"a": 1}, "v": 1, "body": {}}',
        b'{"type": "sample", "v": 1, "body": []}',
        b'{"type": "sample", "v": 1, "body": "x"}',
        b'{"type": "sample", "v": 1, "body": {"config_id": 1}}',  # required fields missing
        b'{"type": "sample", "v": 1, "body": {"config_id": 1, "backend": "TRITON", "gpu_us": 1, "eager_us": 2}}',
        b'{"type": "configure", "v": 1, "body": {"config_id": 1, "workload": {"seq": 0}, "enabled": []}}',
        b'{"type": "configure", "v": 1, "body": {"config_id": 1, "workload": [], "enabled": []}}',
        b'{"type": "configure", "v": 1, "body": {"config_id": 1, "workload": {"dtype": []}, "enabled": []}}',
        b'{"type": "kernel_capture", "v": 1, "body": {"config_id": 1, "backend": "MATH", "kernels": [3], "kernel_us": []}}',
        b'{"type": "ready", "v": 1, "body": {"environment": 5}}',
    ],
)
def test_garbage_is_refused_with_protocol_error(data):
    with pytest.raises(ProtocolError):
        decode(data)


json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(sorted(RECORD_TYPES)) | json_values,
    version=st.just(PROTOCOL_VERSION) | json_values,
    body=st.dictionaries(
        st.sampled_from(["config_id", "backend", "choice", "gpu_us", "eager_us", "kernels", "kernel_us", "workload",
                         "enabled", "environment", "line", "message", "paths", "request_id", "status"]),
        json_values,
    ),
)
def test_any_json_message_decodes_to_a_record_or_protocol_error(kind, version, body):
    """Whatever arrives on the pipe: a record of this protocol, or a ProtocolError; never another exception."""
    data = json.dumps({"type": kind, "v": version, "body": body}).encode()
    try:
        record = decode(data)
    except ProtocolError:
        return
    assert type(record) in RECORD_TYPES.values()


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_any_bytes_decode_to_a_record_or_protocol_error(data):
    try:
        decode(data)
    except ProtocolError:
        pass


def test_an_environment_written_with_the_old_priority_order_name_still_reads():
    """Reports written before the rename carry ``environment.priority_order``: torch's default order."""
    from dataclasses import asdict

    old = {k: v for k, v in asdict(H200).items() if k != "default_priority_order"}
    old["priority_order"] = list(H200.default_priority_order)
    assert Environment.from_dict(old) == H200
    assert Environment.from_dict(asdict(H200)) == H200
