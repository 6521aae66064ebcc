"""The legacy API and a custom priority, through the real engine on the CPU."""

from __future__ import annotations

import pytest

from sdpa_tui.core.backends import ALL_BACKENDS, Backend
from sdpa_tui.core.workload import Workload
from sdpa_tui.engine.host.headless import measure

pytestmark = pytest.mark.torch_range

TINY = Workload(batch=1, heads=2, kv_heads=2, seq=64, kv_seq=64, head_dim=32, dtype="fp32")


def test_legacy_api_leaves_cudnn_on_and_a_custom_priority_is_reported():
    # Legacy sdp_kernel(enable_flash=False, enable_math=True, enable_mem_efficient=False):
    # torch still has the cuDNN flag on, and the engine says so.
    legacy = measure(TINY, (Backend.MATH,), device="cpu", duration_s=0.2, legacy_api=True)
    d = legacy.dispatch
    assert Backend.CUDNN in d.effective and Backend.FLASH not in d.effective
    assert "never touches the cuDNN flag" in d.note
    assert d.choice is Backend.MATH  # on the CPU cuDNN cannot run, so MATH is what is left
    assert legacy.backends[Backend.CUDNN].enabled and legacy.backends[Backend.CUDNN].status == "not_eligible"

    # A custom priority puts MATH first in torch's order; on the CPU torch's choice does not
    # follow that order (it still picks its flash kernel), and the note says so.
    reordered = measure(TINY, ALL_BACKENDS, device="cpu", duration_s=0.2, priority=(Backend.MATH, Backend.FLASH))
    assert reordered.dispatch.priority_order[:2] == (Backend.MATH.value, Backend.FLASH.value)
    assert reordered.dispatch.choice is Backend.FLASH
    assert "CPU dispatch does not follow the priority order" in reordered.dispatch.note
