"""watch's gradient check on a GPU, against torch run plainly on the same program: a backward that torch itself
shows non-finite is flagged with the backend blamed and saved as a repro whose script reproduces it; one that torch
shows finite is not flagged. pytorch#196678's repro (cuDNN, a mask, L % 128 == 64) and its twin at L = 768."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import torch
from support.paths import PROGRAMS, REPO
from support.watching import ENV, plain, watch

pytestmark = [pytest.mark.cuda, pytest.mark.torch_range]
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@needs_cuda
@pytest.mark.parametrize("length", [704, 768])
def test_a_backward_torch_shows_non_finite_is_flagged_and_its_repro_reproduces_it(tmp_path, length):
    program = (sys.executable, str(PROGRAMS / "grad_nan_repro.py"), str(length), "2", "cuda")
    truth = [int(n) for n in re.findall(r"grad_q non-finite (\d+) of", plain(*program))]
    proc, report = watch(tmp_path, *program)
    assert proc.returncode == 0, proc.stderr
    backward = report["calls"][0]["check"]["backward"]
    assert backward["samples"] == 2
    if any(truth):
        assert backward["ok"] is False and backward["blame"] == "the backend's backward"
        assert backward["first_bad"]["dq"] == truth[0]
        assert "GRADIENT CHECK FAILED" in proc.stdout
        script = subprocess.run([sys.executable, f"{backward['repro']}/repro.py"], capture_output=True, text=True,
                                env=ENV, cwd=REPO, timeout=300, check=True).stdout
        ran = report["calls"][0]["backend"]
        assert re.search(rf"^{ran} +non-finite: dq {truth[0]:,} of", script, re.M), script
        assert {r["backend"]: r["result"] for r in backward["replays"]}[ran] == "non-finite"
    else:
        assert backward["ok"] is True and not backward["blame"] and backward["compared"] >= 1
        assert not backward["repro"], "a clean call is not saved"
        assert max(backward["max_rel_error"].values()) <= backward["tolerance"]
    json.dumps(report)  # the whole report stays plain data
