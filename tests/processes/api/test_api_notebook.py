"""``%load_ext sdpa_tui`` and ``%%sdpa_watch``: in an IPython shell run headless, and in a notebook executed by
``jupyter nbconvert --execute`` (the table and the advice displayed under the cell). Skipped where IPython, or
nbconvert and its kernel, are not installed (the test extra brings them)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from support.paths import REPO

pytestmark = pytest.mark.torch_range

ROOT = REPO
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
CELL = """import torch
import torch.nn.functional as F
torch.manual_seed(0)
q = torch.randn(1, 2, 32, 16)
out = [F.scaled_dot_product_attention(q, q, q, is_causal=True) for _ in range(6)]
print("cell ran", out[-1].shape)
"""


@pytest.mark.skipif(importlib.util.find_spec("IPython") is None, reason="IPython is not installed")
def test_the_magic_runs_the_cell_watched_in_a_headless_ipython(tmp_path):
    script = tmp_path / "magic.py"
    script.write_text(
        "import json, sys, torch.nn.functional as F\n"
        "ip = get_ipython()\n"
        "ip.run_line_magic('load_ext', 'sdpa_tui')\n"
        "before = F.scaled_dot_product_attention\n"
        f"ip.run_cell_magic('sdpa_watch', '--no-advice --report {tmp_path / 'cell.json'}', {CELL!r})\n"
        "assert F.scaled_dot_product_attention is before\n"
        "print('counts', json.dumps([c.count for c in ip.user_ns['sdpa_report'].calls]))\n"
    )
    proc = subprocess.run([sys.executable, "-m", "IPython", "--no-banner", "--colors=nocolor", str(script)],
                          capture_output=True, text=True, timeout=240, cwd=tmp_path, env=ENV,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "cell ran torch.Size([1, 2, 32, 16])" in proc.stdout and "counts [6]" in proc.stdout
    assert "SDPA calls of %%sdpa_watch cell 1" in proc.stdout and "qkv[1,2,32,16] fp32 causal" in proc.stdout
    report = json.loads((tmp_path / "cell.json").read_text())
    assert [c["count"] for c in report["calls"]] == [6] and report["program"] == ["%%sdpa_watch cell 1"]


@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("nbconvert", "nbformat", "ipykernel")),
                    reason="nbconvert, nbformat or ipykernel is not installed")
def test_a_notebook_executed_by_nbconvert_shows_the_table_and_the_advice_under_the_cell(tmp_path):
    import nbformat

    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("%load_ext sdpa_tui"),
        nbformat.v4.new_code_cell("%%sdpa_watch --advice-budget 5 --no-flex\n" + CELL),
        nbformat.v4.new_code_cell("print([c.count for c in sdpa_report.calls])"),
    ])
    path = tmp_path / "watched.ipynb"
    nbformat.write(notebook, path)
    proc = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                           "--ExecutePreprocessor.timeout=300", "--output", "executed.ipynb", str(path)],
                          capture_output=True, text=True, timeout=400, cwd=tmp_path, env=ENV,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    executed = nbformat.read(tmp_path / "executed.ipynb", as_version=4)
    watched, counted = executed.cells[1].outputs, executed.cells[2].outputs
    html = "".join(o.get("data", {}).get("text/html", "") for o in watched if o.output_type == "display_data")
    assert "SDPA calls of %%sdpa_watch cell 1" in html and "qkv[1,2,32,16] fp32 causal" in html
    assert "alternatives measured after the program exited: 1 signature(s)" in html, "the advice, under the table"
    assert "".join(o.get("text", "") for o in counted).strip() == "[6]"
