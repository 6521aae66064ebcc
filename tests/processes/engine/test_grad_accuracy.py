"""The lab's gradient check: per backend, dq, dk and dv against float64 MATH's on the same inputs and output
gradient (fwd+bwd workloads), and NaN/Inf in the output or a gradient named."""

from __future__ import annotations

import pytest

from sdpa_tui.core.backends import Backend
from sdpa_tui.core.lab.report_model import ReportModel
from sdpa_tui.core.lab.session import Session
from sdpa_tui.core.protocol.records import Accuracy, BackendStatus
from sdpa_tui.core.workload import Workload
from sdpa_tui.exports.lab.report_data import backend_dict

pytestmark = pytest.mark.torch_range


def test_fwd_bwd_reports_each_gradients_error_and_fwd_reports_none():
    pytest.importorskip("torch")
    from sdpa_tui.engine.host.headless import measure

    small = Workload(batch=1, heads=2, kv_heads=2, seq=64, kv_seq=64, head_dim=32, dtype="fp32")
    trained = measure(Workload(**{**small.to_dict(), "direction": "fwd+bwd"}), (Backend.FLASH, Backend.MATH),
                      device="cpu", duration_s=0.5)
    for row in (r for r in trained.rows() if r.status == "ok"):
        assert row.grad_max_rel is not None and len(row.grad_max_rel) == 3, row.backend
        assert all(0 <= e < 1e-4 for e in row.grad_max_rel), (row.backend, row.grad_max_rel)  # fp32 against fp64
        assert row.nonfinite == ()
        assert set(backend_dict(row)["grad_error"]) == {"dq", "dk", "dv"}
    forward = measure(small, (Backend.MATH,), device="cpu", duration_s=0.5)
    math = next(r for r in forward.rows() if r.backend is Backend.MATH)
    assert math.max_rel_error is not None and math.grad_max_rel is None and backend_dict(math)["grad_error"] is None


def test_nonfinite_tensors_are_named():
    torch = pytest.importorskip("torch")
    from sdpa_tui.engine.measuring.quality import nonfinite

    fine, nan, inf = torch.zeros(3), torch.tensor([0.0, float("nan")]), torch.tensor([float("-inf")])
    assert nonfinite({"out": fine, "dq": nan, "dk": fine, "dv": inf}) == ("dq", "dv")


def test_a_nonfinite_gradient_reaches_the_report_row():
    session = Session(Workload(direction="fwd+bwd"))
    session.apply(BackendStatus(0, Backend.CUDNN, "ok"))
    session.apply(Accuracy(0, Backend.CUDNN, 1e-3, 1e-3, "", (float("nan"), 1e-3, 1e-3), (float("nan"), 1e-3, 1e-3),
                           ("dq",)))
    row = next(r for r in session.rows() if r.backend is Backend.CUDNN)
    assert row.nonfinite == ("dq",) and backend_dict(row)["nonfinite"] == ["dq"]


def test_the_reports_text_gives_each_backends_gradient_errors_and_names_a_nan():
    """The report's table has one err column (the forward's); fwd+bwd adds a line with dq/dk/dv per backend."""
    from sdpa_tui.exports.lab.report_tables import context_lines

    session = Session(Workload(direction="fwd+bwd"))
    session.apply(BackendStatus(0, Backend.CUDNN, "ok"))
    session.apply(Accuracy(0, Backend.CUDNN, 1e-3, 1e-3, "", (float("nan"), 1e-3, 1e-3), (float("nan"), 1e-3, 2e-3),
                           ("dq",)))
    lines = context_lines(ReportModel.of(session))
    assert "gradients, max |grad - ref| / max |ref| for dq, dk, dv: cuDNN nan/1.0e-03/2.0e-03" in lines
    assert "cuDNN: NaN or Inf in dq" in lines
    assert not any(line.startswith("gradients") for line in context_lines(ReportModel.of(Session(Workload()))))
