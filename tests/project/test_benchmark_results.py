"""Benchmark results are committed: how they were run is written down without machine paths."""

from __future__ import annotations

import json
import sys

import pytest
from support.paths import BENCHMARKS

sys.path.insert(0, str(BENCHMARKS))

from recorded import command_line  # noqa: E402


def test_absolute_paths_keep_only_their_file_name(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/somewhere/benchmarks/soak/soak.py"])
    recorded = command_line(["--out", "/scratch/out/r/soak-cuda", "--json=/scratch/f.json", "--minutes", "8",
                             "results/x.json"])
    assert recorded == ["soak.py", "--out", "soak-cuda", "--json=f.json", "--minutes", "8", "results/x.json"]


def test_without_arguments_it_reads_the_process_command_line(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/somewhere/benchmarks/clocks/fidelity.py", "--json", "/scratch/fidelity.json"])
    assert command_line() == ["fidelity.py", "--json", "fidelity.json"]


@pytest.mark.parametrize("path", sorted((BENCHMARKS / "results").glob("*.json")), ids=lambda p: p.name)
def test_committed_results_name_no_machine_path(path):
    def commands(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "command":
                    yield value
                else:
                    yield from commands(value)
        elif isinstance(node, list):
            for item in node:
                yield from commands(item)

    for command in commands(json.loads(path.read_text(encoding="utf-8"))):
        words = command if isinstance(command, list) else str(command).split()
        assert not [w for w in words if isinstance(w, str) and w.lstrip("-").split("=")[-1].startswith("/")], command


def test_write_result_writes_the_json_where_asked(tmp_path, capsys):
    from recorded import write_result

    out = write_result({"a": [1, 2]}, tmp_path / "r.json", "unused.json")
    assert json.loads(out.read_text(encoding="utf-8")) == {"a": [1, 2]}
    assert capsys.readouterr().out.strip() == f"wrote {out}"
