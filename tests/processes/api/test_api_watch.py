"""The Python API, ``with watch() as w:``: the same calls as ``sdpa-tui watch`` of the same program, the program's
output unchanged, everything put back when the block ends (and when it raises), nested and repeated blocks, its JSON
read by ``compare``, its table in Rich and in Jupyter, and ``watch --attach``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest
from support.paths import PROGRAMS, REPO
from support.waiting import wait_until

from sdpa_tui.commands.exit_codes import EXIT_SLOWER

EXIT_OK = 0

pytestmark = pytest.mark.torch_range

ROOT = REPO
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def run(*argv: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env=ENV, stdin=subprocess.DEVNULL)


def counts(report: dict) -> dict[tuple, int]:
    """Each row's calls by what tells it apart: site, shapes, mask, causal, dropout, flags, grad."""
    return {(c["site"].rsplit("/", 1)[-1], tuple(c["q_shape"]), tuple(c["kv_shape"]), c["mask"]["kind"], c["causal"],
             c["dropout_p"], tuple(c["flags"]), c["grad"]): c["count"] for c in report["calls"]}


@pytest.fixture(scope="module")
def shapes_both_ways(tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict, subprocess.CompletedProcess, dict]:
    """shapes.py under ``watch --report`` and inside a block, at the same time (two cores)."""
    tmp = tmp_path_factory.mktemp("shapes")
    program = str(PROGRAMS / "shapes.py")
    results: dict[str, subprocess.CompletedProcess] = {}
    command = threading.Thread(target=lambda: results.setdefault("command", run(
        "-m", "sdpa_tui", "watch", "--report", str(tmp / "command.json"), "--no-advice", "--", sys.executable,
        program)))
    command.start()
    results["api"] = run(str(PROGRAMS / "api_block.py"), str(tmp / "api.json"), program)
    command.join()
    return (results["command"], json.loads((tmp / "command.json").read_text()), results["api"],
            json.loads((tmp / "api.json").read_text()))


def test_a_block_counts_what_the_command_counts_on_the_same_program(shapes_both_ways):
    command, by_command, api, by_api = shapes_both_ways
    assert command.returncode == 0 and api.returncode == 0, command.stderr + api.stderr
    assert len(by_api["calls"]) == 5 and counts(by_api) == counts(by_command)
    backends = {c["site"]: c["backend"] for c in by_command["calls"]}
    assert {c["site"]: c["backend"] for c in by_api["calls"]} == backends
    reasons = {c["site"]: c["why_not"] for c in by_command["calls"]}
    assert {c["site"]: c["why_not"] for c in by_api["calls"]} == reasons
    checks = {k: c["check"]["samples"] for k, c in zip(counts(by_command), by_command["calls"])}
    assert {k: c["check"]["samples"] for k, c in zip(counts(by_api), by_api["calls"])} == checks
    assert sum(checks.values()) >= 4, "the sampled output checks ran"
    assert by_api["schema_version"] == by_command["schema_version"] and set(by_api) == set(by_command)
    assert by_api["exit_code"] == 0 and by_api["program"] == [str(PROGRAMS / "shapes.py")]


def test_the_programs_output_is_the_same_with_and_without_the_block(shapes_both_ways):
    _, _, api, _ = shapes_both_ways
    plain = run(str(PROGRAMS / "shapes.py"))
    assert api.stdout == plain.stdout and api.stderr == plain.stderr == ""


def test_compare_reads_the_blocks_json_against_the_commands(shapes_both_ways, tmp_path):
    _, by_command, _, by_api = shapes_both_ways
    (tmp_path / "a.json").write_text(json.dumps(by_command))
    (tmp_path / "b.json").write_text(json.dumps(by_api))
    proc = run("-m", "sdpa_tui", "compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--json")
    # read and matched call by call: 0, or 1 where a host time of this loaded CPU swung past the threshold (times
    # per call here moved by over 100x between two runs); never 2 (not a report) or 3 (nothing comparable)
    assert proc.returncode in (EXIT_OK, EXIT_SLOWER), proc.stderr
    calls = json.loads(proc.stdout)["calls"]
    assert len(calls) == 5 and all(c["count"][0] == c["count"][1] for c in calls)


def test_threads_dataloader_workers_and_forks_are_watched_as_under_the_command(tmp_path):
    proc = run(str(PROGRAMS / "api_block.py"), str(tmp_path / "api.json"), str(PROGRAMS / "concurrency.py"))
    assert proc.returncode == 0, proc.stderr
    assert "ok threads=4 batches=4 pool=3 fork=1" in proc.stdout
    report = json.loads((tmp_path / "api.json").read_text())
    assert sum(c["count"] for c in report["calls"]) >= 4 + 4  # the threads' and the loader's workers' calls
    assert not os.environ.get("SDPA_TUI_WATCH_SOCKET")


def test_importing_the_api_imports_no_torch_and_watch_is_callable_whichever_way_it_is_reached():
    code = ("import sys, sdpa_tui; from sdpa_tui import watch; import sdpa_tui.watch.states.state_socket\n"
            "print('torch' in sys.modules, 'textual' in sys.modules, callable(watch), sdpa_tui.watch is watch)\n"
            "with sdpa_tui.watch(name='reached') as w:\n    pass\n"
            "print('torch' in sys.modules, w.report.watch_report.program)\n")
    proc = run("-c", code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["False False True True", "True ['reached']"]


# -- in this process: what the block changes and puts back ----------------------------------------------------------
def torch_as_found() -> dict[str, object]:
    """What a block rebinds, read from torch (and the environment, and the threads)."""
    import torch
    import torch.nn.functional as F
    from torch.jit import _builtins

    found: dict[str, object] = {"sdpa": F.scaled_dot_product_attention, "compile": torch.compile}
    found.update({name: getattr(torch, name, None) for name in ("_native_multi_head_attention",
                                                               "_transformer_encoder_layer_fwd")})
    found.update({name: getattr(torch._C, name) for name in dir(torch._C) if name.startswith("_set_sdp_")})
    for name in ("_TorchCompileInductorWrapper", "_TorchCompileWrapper"):
        found[name] = vars(getattr(torch, name)).get("__call__")
    table = _builtins._get_builtin_table()
    found["scripted_as"] = {name: table.get(id(found[name])) for name in
                            ("sdpa", "_native_multi_head_attention", "_transformer_encoder_layer_fwd")}
    found["env"] = {k: os.environ.get(k) for k in ("PYTHONPATH", "SDPA_TUI_WATCH_SOCKET", "TEARDOWN_CUPTI")}
    found["threads"] = sorted(t.name for t in threading.enumerate() if t.name.startswith("sdpa-tui"))
    return found


def put_back(before: dict[str, object]) -> None:
    """Torch and the environment as they were before the block, and no thread of its left (a thread of an earlier
    test in this worker may end meanwhile: the threads now are a subset of those before)."""
    after = torch_as_found()
    assert set(after.pop("threads")) <= set(before["threads"])
    assert after == {k: v for k, v in before.items() if k != "threads"}


def attend(n: int = 3, length: int = 16) -> list:
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    q = torch.randn(1, 2, length, 8)
    return [F.scaled_dot_product_attention(q, q, q, is_causal=True) for _ in range(n)]


def test_leaving_the_block_puts_back_everything_it_changed_also_when_it_raises():
    from sdpa_tui import watch

    before = torch_as_found()
    with watch() as w:
        during = torch_as_found()
        attend()
    assert during["sdpa"] is not before["sdpa"] and during["compile"] is not before["compile"]
    assert during["env"]["SDPA_TUI_WATCH_SOCKET"]
    added = set(during["threads"]) - set(before["threads"])
    # the block's listener; on a torch built with CUDA also the checks' warm-up, waiting for a context
    assert "sdpa-tui-watch-accept" in added and added <= {"sdpa-tui-watch-accept", "sdpa-tui-warm-up"}, added
    assert during["scripted_as"]["sdpa"] == "aten::scaled_dot_product_attention", "TorchScript sees the op"
    put_back(before)
    from torch.jit import _builtins

    assert _builtins._get_builtin_table().get(id(during["sdpa"])) is None, "the wrapper is no op for TorchScript"
    assert [c.count for c in w.report.calls] == [3]
    with pytest.raises(ZeroDivisionError):
        with watch() as failed:
            attend(2)
            1 / 0
    put_back(before)
    report = failed.report.to_dict()
    assert report["exit_code"] == 1 and "ZeroDivisionError" in report["error"]
    assert [c["count"] for c in report["calls"]] == [2]


def test_outputs_inside_a_block_are_bitwise_those_outside():
    import torch

    from sdpa_tui import watch

    plain = attend(300)
    with watch():
        watched = attend(300)
    assert all(torch.equal(a, b) for a, b in zip(plain, watched))


def test_a_nested_block_shares_the_outer_one_and_repeated_blocks_count_apart():
    import torch.nn.functional as F

    from sdpa_tui import watch

    with watch() as outer:
        attend(2)
        wrapper = F.scaled_dot_product_attention
        with watch() as inner:
            assert F.scaled_dot_product_attention is wrapper, "the inner block installs nothing"
            attend(3)
        assert inner.shared and [c.count for c in inner.report.calls] == [5], "the outer's calls so far"
        assert F.scaled_dot_product_attention is wrapper, "the outer block goes on"
        attend(1)
    assert [c.count for c in outer.report.calls] == [6]
    with watch() as again:
        attend(4, length=32)
    assert [(c.count, c.signature.q_shape) for c in again.report.calls] == [(4, (1, 2, 32, 8))]
    with pytest.raises(RuntimeError, match="one block"):
        with again:
            pass


def test_the_table_is_rich_and_shows_in_jupyter():
    from rich.console import Console

    from sdpa_tui import watch

    with watch(name="a notebook cell") as w:
        attend(5)
    console = Console(record=True, width=120, file=open(os.devnull, "w"))
    console.print(w.report.table())
    text = console.export_text()
    assert "SDPA calls of a notebook cell" in text and "qkv[1,2,16,8] fp32 causal" in text and "Flash" in text
    bundle = w.report._repr_mimebundle_()
    assert "qkv[1,2,16,8]" in bundle["text/html"] and "test_api_watch.py:" in bundle["text/plain"]
    assert "1 signature, 5 calls" in str(w.report)
    assert set(w.report.table()._repr_mimebundle_()) == {"text/plain", "text/html"}


# -- watch --attach --------------------------------------------------------------------------------------------------
ATTACHED = """
import sys
import torch
import torch.nn.functional as F
from sdpa_tui import watch

q = torch.randn(1, 2, 16, 8)
with watch(publish=sys.argv[1]) as w:
    for _ in range(7):
        F.scaled_dot_product_attention(q, q, q)
print([c.count for c in w.report.calls])
"""


@pytest.mark.parametrize("where", ["socket", "tcp"])
def test_watch_attach_shows_the_calls_a_block_publishes(tmp_path, where):
    if where == "socket":
        address = str(tmp_path / "calls.sock")
    else:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            address = f"127.0.0.1:{s.getsockname()[1]}"
    attach = subprocess.Popen([sys.executable, "-m", "sdpa_tui", "watch", "--attach", address, "--report",
                               str(tmp_path / "attached.json"), "--no-advice"], cwd=ROOT, env=ENV, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        if where == "socket":  # else: the block's publisher retries until the command listens
            wait_until(lambda: os.path.exists(address) or attach.poll() is not None, 60, "the command listening")
        script = tmp_path / "attached.py"
        script.write_text(ATTACHED)
        block = run(str(script), address)
        assert block.returncode == 0 and block.stdout.strip() == "[7]", block.stderr
        out, err = attach.communicate(timeout=60)
    finally:
        attach.kill()
    assert attach.returncode == 0, err
    report = json.loads((tmp_path / "attached.json").read_text())
    assert [c["count"] for c in report["calls"]] == [7] and report["exit_code"] == 0
    assert report["program"] == ["--attach", address] and out.startswith("SDPA calls of --attach")


def test_watch_attach_with_a_program_or_no_address_is_bad_input(tmp_path):
    proc = run("-m", "sdpa_tui", "watch", "--attach", str(tmp_path / "s.sock"), "--", "python", "x.py")
    assert proc.returncode == 2 and proc.stderr == "sdpa-tui watch: error: --attach runs nothing: give no program with it\n"
    proc = run("-m", "sdpa_tui", "watch", "--attach", "localhost:http", "--report", str(tmp_path / "r.json"))
    assert proc.returncode == 2 and "expected HOST:PORT" in proc.stderr and proc.stderr.count("\n") == 1
