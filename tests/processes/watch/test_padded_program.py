"""The padded-batch program that judges packed attention's advice (``tests/watch_programs/hf_padded_packed.py``),
with a packed code applied by hand on the CPU: the once-per-batch part run once per forward (the layers share the
mask), the every-call part in every layer, and the real tokens' logits those of SDPA. ``varlen_attn`` runs on CUDA
only (and SDPA on nested tensors with gradients asks for cuDNN on a CUDA build of torch without a GPU): a stand-in of
the same signature, SDPA on each packed sequence alone, takes its place in the code's text."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sdpa_tui.core.calls.call_signature import CallSignature
from sdpa_tui.core.calls.mask_forms import CAUSAL_KEY_PADDING
from sdpa_tui.core.calls.packed_alternative import varlen_code

PROGRAM = Path(__file__).parents[2] / "watch_programs" / "hf_padded_packed.py"
IMPORT = "from torch.nn.attention.varlen import varlen_attn"
STAND_IN = """def varlen_attn(q, k, v, cu_q, cu_k, max_q, max_k, *, is_causal=False, window_size=(-1, -1), enable_gqa=False,
                scale=None):
    bounds = cu_q.tolist()
    assert max_q == max(b - a for a, b in zip(bounds, bounds[1:]))
    causal = is_causal or window_size == (-1, 0)
    return torch.cat([F.scaled_dot_product_attention(*(t[a:b].transpose(0, 1)[None] for t in (q, k, v)),
                                                     is_causal=causal, enable_gqa=enable_gqa, scale=scale
                                                     )[0].transpose(0, 1) for a, b in zip(bounds, bounds[1:])])"""


def test_the_packed_code_applied_by_hand_reads_the_mask_once_per_forward_and_keeps_the_real_tokens(tmp_path):
    pytest.importorskip("transformers")
    sig = CallSignature((8, 4, 64, 16), (8, 2, 64, 16), "torch.float32", "cpu", "bool", (8, 1, 64, 64), gqa=True,
                        grad=True)
    report = {"calls": [{"mask": {"form": CAUSAL_KEY_PADDING}, "grad": True, "count": 16, "saving_us_per_call": 1.0,
                         "advice": {"clock": "eager"},
                         "best": {"code": varlen_code(sig, CAUSAL_KEY_PADDING).replace(IMPORT, STAND_IN)}}]}
    (tmp_path / "report.json").write_text(json.dumps(report))
    proc = subprocess.run([sys.executable, str(PROGRAM), "cpu", "float32", "64", "0.25", "--code-from",
                           str(tmp_path / "report.json"), "--json", str(tmp_path / "realised.json")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "realised.json").read_text())
    assert result["attention_calls_per_step"] == 2, "the tiny Llama's two layers"
    assert result["once_per_batch_runs"] == result["steps"], "one reading of the mask per forward, not per layer"
    assert result["logits_max_rel_diff_real_tokens"] < 1e-4


def test_only_a_training_calls_advice_is_applied_to_the_training_steps(tmp_path):
    pytest.importorskip("transformers")
    sig = CallSignature((8, 4, 64, 16), (8, 2, 64, 16), "torch.float32", "cpu", "bool", (8, 1, 64, 64), gqa=True)
    report = {"calls": [{"mask": {"form": CAUSAL_KEY_PADDING}, "grad": False, "count": 16, "saving_us_per_call": 1.0,
                         "advice": {"clock": "eager"},
                         "best": {"code": varlen_code(sig, CAUSAL_KEY_PADDING).replace(IMPORT, STAND_IN)}}]}
    (tmp_path / "report.json").write_text(json.dumps(report))
    proc = subprocess.run([sys.executable, str(PROGRAM), "cpu", "float32", "64", "0.25", "--code-from",
                           str(tmp_path / "report.json")], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "no padded training call has advice" in proc.stderr
