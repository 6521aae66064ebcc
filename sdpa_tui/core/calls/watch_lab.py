"""The lab's workload closest to a watched call (``t`` in the Calls view sends a call to the lab)."""

from __future__ import annotations

from ..workload import DTYPES, Workload, WorkloadError
from .call_signature import CallSignature, dtype_name


def lab_workload(signature: CallSignature) -> tuple[Workload, list[str]]:
    """The lab's workload closest to a call, and what the lab does differently (said to the user).

    Raises :class:`WorkloadError` where the call has no lab counterpart.
    """
    q, kv = signature.q_shape, signature.kv_shape
    if len(q) < 3 or len(kv) < 3:
        raise WorkloadError(f"the lab measures [batch, heads, length, head dim] calls; this one is q{list(q)}")
    if q[-1] != kv[-1]:
        raise WorkloadError(f"the lab uses one head dim; q has {q[-1]}, k has {kv[-1]}")
    dtype = dtype_name(signature.dtype)
    if dtype not in DTYPES:
        raise WorkloadError(f"the lab measures fp16, bf16 and fp32; this call is {signature.dtype}")
    batch = 1
    for size in q[:-3]:
        batch *= size
    differences = []
    if signature.causal:
        mask = "causal"
    elif signature.mask != "none":
        mask = "padding"
        differences.append(f"the call's {signature.mask} mask {list(signature.mask_shape or ())} is measured "
                           "as the lab's boolean key-padding mask")
    else:
        mask = "none"
    if signature.causal and signature.mask != "none":
        differences.append("the call has both a mask and is_causal; the lab measures causal only")
    if signature.dropout_p:
        differences.append(f"the lab runs without dropout (the call has dropout_p={signature.dropout_p:g})")
    if signature.scale is not None:
        differences.append(f"the lab uses the default scale (the call has scale={signature.scale:g})")
    kv_heads = kv[-3]
    if kv_heads != q[-3] and not signature.gqa:
        raise WorkloadError(f"q has {q[-3]} heads and k {kv_heads} without enable_gqa: SDPA broadcasts them, the lab cannot")
    workload = Workload(
        batch=batch, heads=q[-3], kv_heads=kv_heads, seq=q[-2], kv_seq=kv[-2], head_dim=q[-1], dtype=dtype,
        mask=mask, direction="fwd+bwd" if signature.grad else "fwd",
    )
    return workload, differences
