"""Reading torch's why-not reasons off fd 2 inside a watched process (``watch/probe/explain/choice.py``)."""

from __future__ import annotations

import os

import pytest

from sdpa_tui.watch.probe.explain import choice

pytestmark = pytest.mark.torch_range

# What ``can_use_cudnn_attention(params, debug=True)`` wrote to fd 2 in a torchrun rank on an H200 (2026-11-26,
# torch 2.11): once torch.distributed is initialised, c10 puts "[rankN]:" before its own log prefix.
RANK_LINE = (b"[rank0]:[W1126 00:43:59.301030640 sdp_utils_cpp.h:91] Warning: Expected query, key and value to all"
             b" be of dtype: {Half, BFloat16}. Got Query dtype: float, Key dtype: float, and Value dtype: float"
             b" instead. (function check_tensor_dtype)\n")
PLAIN_LINE = RANK_LINE.removeprefix(b"[rank0]:")


def test_a_ranks_reason_is_read_and_not_left_on_the_programs_stderr(capfd) -> None:
    result, lines = choice._with_fd2_read(lambda: os.write(2, RANK_LINE) and False)
    assert result is False
    assert lines == ["Expected query, key and value to all be of dtype: {Half, BFloat16}. Got Query dtype: float, "
                     "Key dtype: float, and Value dtype: float instead."]
    assert capfd.readouterr().err == ""


def test_a_reason_without_a_rank_reads_the_same() -> None:
    _, rank_lines = choice._with_fd2_read(lambda: os.write(2, RANK_LINE))
    _, plain_lines = choice._with_fd2_read(lambda: os.write(2, PLAIN_LINE))
    assert rank_lines == plain_lines and len(plain_lines) == 1


def test_another_threads_output_meanwhile_goes_back_to_stderr(capfd) -> None:
    _, lines = choice._with_fd2_read(lambda: os.write(2, b"step 10 loss 2.31\n" + RANK_LINE))
    assert len(lines) == 1
    assert capfd.readouterr().err == "step 10 loss 2.31\n"
