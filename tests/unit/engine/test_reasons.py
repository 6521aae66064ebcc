"""Torch's why-not reasons, from real probes on an H200 (torch 2.11): each backend keeps its own."""

import json

import pytest
from support import paths

from sdpa_tui.core.backends import Backend

torch = pytest.importorskip("torch")
from sdpa_tui.engine.measuring.eligibility import reasons_for  # noqa: E402

REPORTS = paths.REPORTS / "h200-torch2.11"


def details(report: str, backend: Backend) -> list[str]:
    data = json.loads((REPORTS / report).read_text())
    return next(b["details"] for b in data["backends"] if b["backend"] == backend.value)


def test_fp32_reasons_name_the_dtype_not_the_other_backends():
    # These probes were taken before reasons_for existed: details hold every section.
    for backend in (Backend.CUDNN, Backend.FLASH):
        reasons = reasons_for(backend, details("report-fp32.json", backend))
        assert reasons and "dtype" in reasons[0]
        assert not any("runtime disabled" in r or r.startswith("No available kernel") for r in reasons)


def test_head_dim_512_reasons_are_backend_specific():
    cudnn = reasons_for(Backend.CUDNN, details("report-hd512.json", Backend.CUDNN))
    flash = reasons_for(Backend.FLASH, details("report-hd512.json", Backend.FLASH))
    assert cudnn == ["head_dim should be no more than 256"]
    assert flash[0].startswith("Flash attention requires q,k,v to have the same last dimension")


def test_other_backends_sections_are_ignored():
    messages = [
        "Memory efficient kernel not used because:",
        "Memory Efficient attention has been runtime disabled.",
        "Flash attention kernel not used because:",
        "some flash reason",
    ]
    assert reasons_for(Backend.EFFICIENT, messages) == ["Memory Efficient attention has been runtime disabled."]
    assert reasons_for(Backend.FLASH, messages) == ["some flash reason"]
    assert reasons_for(Backend.CUDNN, messages) == []


@pytest.mark.parametrize("backend", [Backend.CUDNN, Backend.EFFICIENT])
def test_on_the_cpu_a_backend_without_a_cpu_kernel_is_said_so_without_torchs_words_about_flags(backend):
    """Torch says "No viable backend … likely due to turning off both the math kernel and the fused kernels" with
    every flag on: the panel quoted it under the true reason (issue 21, item 3)."""
    torch = pytest.importorskip("torch")
    from sdpa_tui.core.workload import Workload
    from sdpa_tui.engine.measuring.eligibility import probe
    from sdpa_tui.engine.measuring.sdpa_call import Inputs

    device = torch.device("cpu")
    verdict = probe(Inputs.make(Workload(batch=1, heads=2, kv_heads=2, seq=16, kv_seq=16, head_dim=16, dtype="fp32"),
                                device), backend, device)
    assert verdict.status == "not_eligible"
    assert verdict.reason == f"{backend.label} has no CPU implementation (on the CPU, SDPA has a flash kernel and MATH)"
    assert not any("turning off" in d for d in verdict.details), verdict.details
