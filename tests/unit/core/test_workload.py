"""The workload: defaults, validation with messages that say what is allowed, FLOPs, dict round trip."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdpa_tui.core.workload import DIRECTIONS, DTYPES, LIMITS, MASKS, MAX_INPUT_BYTES, Workload, WorkloadError

SIZE_FIELDS = tuple(LIMITS)  # batch, heads, kv_heads, seq, kv_seq, head_dim


def test_defaults_are_the_design_shape():
    w = Workload()
    assert (w.batch, w.heads, w.seq, w.head_dim) == (2, 8, 512, 64)
    assert (w.kv_heads, w.kv_seq) == (w.heads, w.seq)
    assert w.dtype == "fp16"
    assert w.mask == "none" and w.direction == "fwd"
    assert not w.causal and not w.gqa and not w.backward
    assert w.describe() == "[2, 8, 512, 64] fp16"


def _smallest() -> dict:
    """Every size 1: whatever one field is set to alone decides validity (kv_heads 1 divides any heads)."""
    return {name: 1 for name in SIZE_FIELDS}


@pytest.mark.parametrize("name", SIZE_FIELDS)
@pytest.mark.parametrize("bad", ["zero", "negative", "over", "bool", "float", "str"])
def test_invalid_sizes_name_the_field_and_the_range(name, bad):
    limit = LIMITS[name]
    value = {"zero": 0, "negative": -3, "over": limit + 1, "bool": True, "float": 2.0, "str": "8"}[bad]
    kwargs = {**_smallest(), name: value}
    with pytest.raises(WorkloadError) as info:
        Workload(**kwargs)
    message = str(info.value)
    assert name in message
    # the allowed range: from 1 to the limit, both as numbers in the text
    assert re.search(r"(?<![\d,.])1(?![\d,.])", message) and f"{limit:,}" in message, message
    assert repr(value) in message or f"{value:,}" in message, message


@pytest.mark.parametrize("name", SIZE_FIELDS)
def test_sizes_at_the_limits_are_accepted(name):
    small = _smallest()
    assert getattr(Workload(**{**small, name: 1}), name) == 1
    top = {**small, name: LIMITS[name]}
    if name == "kv_heads":
        top["heads"] = LIMITS["kv_heads"]  # kv heads must divide the query heads
    assert getattr(Workload(**top), name) == LIMITS[name]


@pytest.mark.parametrize(
    "field, value, allowed",
    [("dtype", "fp64", DTYPES), ("dtype", "FP16", DTYPES), ("mask", "sliding", MASKS),
     ("direction", "bwd", DIRECTIONS), ("dtype", None, DTYPES), ("mask", 0, MASKS)],
)
def test_unknown_choices_list_the_allowed_ones(field, value, allowed):
    with pytest.raises(WorkloadError) as info:
        Workload(**{field: value})
    message = str(info.value)
    assert field in message
    assert all(choice in message for choice in allowed), message
    assert repr(value) in message


@pytest.mark.parametrize("heads, kv_heads", [(8, 3), (8, 16), (12, 5), (7, 2)])
def test_kv_heads_must_divide_heads(heads, kv_heads):
    with pytest.raises(WorkloadError) as info:
        Workload(heads=heads, kv_heads=kv_heads)
    message = str(info.value)
    assert "kv_heads" in message or "kv heads" in message
    assert str(kv_heads) in message and str(heads) in message
    divisors = [d for d in range(1, heads + 1) if heads % d == 0]
    assert ", ".join(map(str, divisors)) in message, message


@pytest.mark.parametrize("heads, kv_heads", [(8, 1), (8, 2), (8, 4), (8, 8), (12, 3)])
def test_gqa_with_dividing_kv_heads_is_valid(heads, kv_heads):
    w = Workload(heads=heads, kv_heads=kv_heads)
    assert w.gqa == (heads != kv_heads)


def _bytes(w: dict) -> int:
    size = DTYPES[w.get("dtype", "fp16")]
    return size * 2 * w["batch"] * (w["heads"] * w["seq"] + w["kv_heads"] * w["kv_seq"]) * w["head_dim"]


def test_inputs_over_the_memory_limit_are_rejected_with_the_limit():
    # Each size within its own limit, but Q, K, V and the output together too large.
    shape = {"batch": 64, "heads": 64, "kv_heads": 64, "seq": 65_536, "kv_seq": 65_536, "head_dim": 128}
    assert _bytes(shape) > MAX_INPUT_BYTES
    assert all(shape[k] <= LIMITS[k] for k in shape)
    with pytest.raises(WorkloadError) as info:
        Workload(**shape)
    message = str(info.value)
    assert "GiB" in message and f"{MAX_INPUT_BYTES >> 30}" in message, message


def test_input_bytes_counts_q_k_v_and_output():
    shape = {"batch": 3, "heads": 8, "kv_heads": 2, "seq": 100, "kv_seq": 300, "head_dim": 64}
    for dtype in DTYPES:
        assert Workload(**shape, dtype=dtype).input_bytes == _bytes({**shape, "dtype": dtype})


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_flops_formula(mask, direction):
    b, h, nq, nkv, d = 3, 4, 96, 160, 48
    w = Workload(batch=b, heads=h, kv_heads=h, seq=nq, kv_seq=nkv, head_dim=d, mask=mask, direction=direction)
    forward = 4 * b * h * nq * nkv * d
    if mask == "causal":
        forward /= 2
    assert w.forward_flops == pytest.approx(forward)
    total = forward * (3.5 if direction == "fwd+bwd" else 1.0)  # backward counts 2.5x the forward
    assert w.flops == pytest.approx(total)


def test_flops_scale_linearly_with_each_size():
    base = Workload(batch=1, heads=2, kv_heads=2, seq=64, kv_seq=64, head_dim=32)
    for name in ("batch", "seq", "kv_seq", "head_dim"):
        doubled = base.with_changes(**{name: getattr(base, name) * 2})
        assert doubled.flops == pytest.approx(2 * base.flops), name


def test_with_changes_validates():
    w = Workload()
    assert w.with_changes(seq=1024).seq == 1024
    with pytest.raises(WorkloadError):
        w.with_changes(seq=0)
    assert w.seq == 512  # the previous workload stays


def test_from_dict_rejects_unknown_fields_by_name():
    with pytest.raises(WorkloadError) as info:
        Workload.from_dict({**Workload().to_dict(), "sequence": 128, "causal": True})
    assert "sequence" in str(info.value) and "causal" in str(info.value)


@pytest.mark.parametrize("data", [[1, 2], "fp16", None, 3])
def test_from_dict_rejects_non_objects(data):
    with pytest.raises(WorkloadError):
        Workload.from_dict(data)


def test_from_dict_fills_missing_fields_with_defaults():
    assert Workload.from_dict({"seq": 64, "kv_seq": 64}) == Workload(seq=64, kv_seq=64)


def test_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Workload().seq = 3  # type: ignore[misc]


# ------------------------------------------------------------------------------ properties
def _size(name: str) -> st.SearchStrategy[int]:
    # Mostly small values, plus the edges and a little beyond them on both sides.
    limit = LIMITS[name]
    return st.one_of(
        st.integers(min_value=-2, max_value=1_024),
        st.integers(min_value=limit - 2, max_value=limit + 2),
        st.integers(min_value=-(2**40), max_value=2**40),
    )


workloads_kwargs = st.fixed_dictionaries(
    {name: _size(name) for name in SIZE_FIELDS}
    | {
        "dtype": st.sampled_from([*DTYPES, "fp64", ""]),
        "mask": st.sampled_from([*MASKS, "full"]),
        "direction": st.sampled_from([*DIRECTIONS, "bwd"]),
    }
)


@settings(max_examples=400, deadline=None)
@given(workloads_kwargs)
def test_any_int_workload_validates_or_raises_workload_error(kwargs):
    try:
        w = Workload(**kwargs)
    except WorkloadError as exc:
        assert str(exc)  # says what is wrong
        return
    # Valid: everything within bounds, and it survives the trip through a dict (JSON-able).
    assert all(1 <= getattr(w, n) <= LIMITS[n] for n in SIZE_FIELDS)
    assert w.heads % w.kv_heads == 0
    assert w.input_bytes <= MAX_INPUT_BYTES
    assert Workload.from_dict(w.to_dict()) == w


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from([f.name for f in dataclasses.fields(Workload)]), json_values))
def test_from_dict_of_any_json_raises_only_workload_error(data):
    """Whatever a JSON file or a peer sends as a workload: a Workload or a WorkloadError."""
    try:
        w = Workload.from_dict(data)
    except WorkloadError:
        return
    assert Workload.from_dict(w.to_dict()) == w


def test_math_memory_lower_bound_is_the_fp32_attention_matrix_twice():
    w = Workload(batch=1, heads=16, kv_heads=16, seq=8192, kv_seq=8192, head_dim=128, dtype="bf16", mask="causal")
    assert w.math_bytes_lower_bound == 2 * 16 * 8192 * 8192 * 4
    # Measured on an H100: MATH needed 9,728 MiB extra for this workload; a lower bound stays below.
    assert w.math_bytes_lower_bound <= 9_728 * 2**20
