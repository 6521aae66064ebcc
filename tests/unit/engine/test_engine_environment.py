"""``engine.environment.make_current``: the GPU an engine or a measuring child process makes current."""

from __future__ import annotations

import pytest
import torch

from sdpa_tui.engine.measuring.environment import make_current

pytestmark = pytest.mark.torch_range


def test_an_indexed_gpu_is_made_current_and_bare_cuda_or_the_cpu_left_alone(monkeypatch) -> None:
    made: list[torch.device] = []
    monkeypatch.setattr(torch.cuda, "set_device", made.append)
    for name in ("cpu", "cuda", "cuda:1"):
        make_current(torch.device(name))
    # bare "cuda" is the current GPU by definition; torch.cuda.set_device refuses it (ValueError), which once failed
    # every FlexAttention measurement asked for on "cuda" (two H200s, 2026-11-26)
    assert made == [torch.device("cuda:1")]
