"""The command line: bad input is refused with exit code 2 and one plain line, before torch is imported."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from support.paths import REPO
from support.waiting import wait_until

from sdpa_tui import cli
from sdpa_tui.core.backends import ALL_BACKENDS, Backend
from sdpa_tui.core.workload import LIMITS, Workload


def refuse(argv, capsys) -> str:
    """Parse ``argv``, expect exit code 2, return what went to stderr."""
    with pytest.raises(SystemExit) as info:
        cli.parse(argv)
    assert info.value.code == cli.EXIT_USAGE == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


BAD_WORKLOADS = [
    (["--batch", "0"], "batch"),
    (["--batch", "-4"], "batch"),
    (["--heads", "0"], "heads"),
    (["--seq", "0"], "seq"),
    (["--seq", str(LIMITS["seq"] + 1)], "seq"),
    (["--kv-seq", "-1"], "kv_seq"),
    (["--head-dim", str(LIMITS["head_dim"] * 4)], "head_dim"),
    (["--batch", "100000"], "batch"),
    (["--heads", "8", "--kv-heads", "3"], "kv_heads"),
    (["--heads", "4", "--kv-heads", "8"], "kv_heads"),
    (["--batch", "64", "--heads", "64", "--seq", "65536", "--head-dim", "128"], "GiB"),
    (["--causal", "--mask", "padding"], "--causal"),
]


@pytest.mark.parametrize("prefix", [[], ["report"]], ids=["monitor", "report"])
@pytest.mark.parametrize("argv, names", BAD_WORKLOADS, ids=[" ".join(a) for a, _ in BAD_WORKLOADS])
def test_bad_workloads_exit_2_with_one_line(prefix, argv, names, capsys):
    err = refuse([*prefix, *argv], capsys)
    assert err.endswith("\n") and err.count("\n") == 1, err  # one line, no usage dump, no traceback
    assert err.startswith("sdpa-tui: error: "), err
    assert names in err, err


@pytest.mark.parametrize(
    "argv, names",
    [
        (["--backends", "foo"], "foo"),
        (["--backends", "flash,foo"], "foo"),
        (["--backends", ","], "backend"),
        (["--device", "gpu"], "gpu"),
        (["--device", "cuda:x"], "cuda:x"),
        (["report", "--device", "gpu"], "gpu"),
        (["report", "--backends", "foo"], "foo"),
        (["report", "--duration", "0"], "--duration"),
        (["report", "--duration", "-1"], "--duration"),
        (["report", "--duration", "nan"], "--duration"),  # nan > 0 is false too: it measured forever
        (["report", "--duration", "inf"], "--duration"),
        (["sweep", "--seq", "128", "--duration", "nan"], "--duration"),
        (["--engine-memory-mib", "-1"], "--engine-memory-mib"),
        (["--engine-memory-mib", "nan"], "--engine-memory-mib"),
    ],
)
def test_bad_options_exit_2_with_one_line(argv, names, capsys):
    err = refuse(argv, capsys)
    assert err.count("\n") == 1 and err.startswith("sdpa-tui: error: "), err
    assert names in err, err


@pytest.mark.parametrize(
    "argv, names",
    [
        (["--batch", "1.5"], "--batch"), (["--seq", "many"], "--seq"), (["--dtype", "fp64"], "--dtype"),
        (["report", "--mask", "diagonal"], "--mask"), (["--engine-memory-mib", "lots"], "--engine-memory-mib"),
        (["report", "--batch", "x"], "--batch"), (["--metrics-port", "x"], "--metrics-port"),
        (["exporter", "--port", "x"], "--port"), (["serve", "--port", "x"], "--port"),
        (["compare", "a.json"], "B"), (["compare", "a", "b", "--json", "--markdown"], "--markdown"),
    ],
)
def test_malformed_values_exit_2_with_one_line(argv, names, capsys):
    """argparse's own errors: one line naming the option, not the usage block."""
    err = refuse(argv, capsys)
    assert err.count("\n") == 1 and "error:" in err and names in err, err
    assert "--help" in err and "usage:" not in err, err


def test_defaults():
    args, workload, backends = cli.parse([])
    assert workload == Workload()
    assert backends == ALL_BACKENDS
    assert args.command is None and args.device == "auto"
    assert args.engine_memory_mib == 1024.0


def test_the_engine_memory_allowance_reaches_the_engine():
    from sdpa_tui.commands.monitor import make_app

    for argv, expected in ((["--engine-memory-mib", "0"], 0.0), ([], 1024.0)):
        args, workload, backends = cli.parse(argv)
        app = make_app(workload, backends, "cpu", engine_memory_mib=args.engine_memory_mib)
        assert app.controller.configure_record().recycle_growth_mib == expected


def test_report_options_build_the_workload():
    args, workload, backends = cli.parse(
        ["report", "--batch", "1", "--heads", "16", "--kv-heads", "4", "--seq", "2048", "--kv-seq", "1024",
         "--head-dim", "128", "--dtype", "bf16", "--causal", "--direction", "fwd+bwd", "--device", "cpu",
         "--backends", "math, FLASH", "--duration", "0.5"]
    )
    assert args.command == "report" and args.device == "cpu" and args.duration == 0.5
    assert workload == Workload(batch=1, heads=16, kv_heads=4, seq=2048, kv_seq=1024, head_dim=128,
                                dtype="bf16", mask="causal", direction="fwd+bwd")
    assert backends == (Backend.FLASH, Backend.MATH)  # display order, whatever the order typed


def test_kv_defaults_follow_heads_and_seq():
    _, workload, _ = cli.parse(["--heads", "4", "--seq", "128"])
    assert (workload.kv_heads, workload.kv_seq) == (4, 128)


@pytest.mark.parametrize("argv", [["--seq", "128", "report"], ["report", "--seq", "128"]])
def test_options_before_or_after_report_both_count(argv):
    """An option given before the subcommand must not be replaced by the subcommand's default."""
    _, workload, _ = cli.parse(argv)
    assert workload.seq == 128


def test_options_before_report_keep_every_field():
    args, workload, backends = cli.parse(
        ["--batch", "3", "--causal", "--dtype", "fp32", "--device", "cpu", "--backends", "math", "report"]
    )
    assert (workload.batch, workload.mask, workload.dtype) == (3, "causal", "fp32")
    assert args.device == "cpu" and backends == (Backend.MATH,)


def test_report_with_a_bad_workload_exits_2_without_importing_torch(tmp_path):
    """The real command: refused at once, no engine started, torch never imported (in any process).

    A stand-in ``torch`` package first on the path records any import of torch, by this process
    or a child it spawns (children inherit PYTHONPATH).
    """
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    marker = tmp_path / "torch-was-imported"
    (fake / "torch" / "__init__.py").write_text(
        textwrap.dedent(
            f"""
            import os
            with open({str(marker)!r}, "a") as f:
                f.write(str(os.getpid()) + "\\n")
            raise ImportError("sdpa-tui test: torch must not be imported here")
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), str(REPO)])}
    proc = subprocess.run(
        [sys.executable, "-m", "sdpa_tui", "report", "--seq", "0"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.startswith("sdpa-tui: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert "seq" in proc.stderr
    assert not marker.exists(), "torch was imported"


@pytest.mark.parametrize(
    "argv, words",
    [
        (["report", "--json", "{missing}/r.json"], ["--json", "does not exist"]),
        (["report", "--markdown", "{tmp}"], ["--markdown", "is a directory"]),
        (["sweep", "--seq", "128", "--csv", "{missing}/s.csv"], ["--csv", "does not exist"]),
        (["sweep", "--seq", "128", "--json", "{tmp}"], ["--json", "is a directory"]),
        (["report", "--json", "{file}/x.json"], ["--json", "a.json is a file, not a folder"]),
        (["report", "--json", "/proc/r.json"], ["--json", "the folder /proc is not writable"]),  # root: access() yes
        (["sweep", "--seq", "128", "--markdown", "/proc/s.md"], ["--markdown", "the folder /proc is not writable"]),
    ],
)
def test_an_output_file_that_cannot_be_written_is_refused_before_measuring(argv, words, tmp_path, capsys):
    """report measured for seconds, then failed with exit 1 naming a temporary file, on two lines."""
    (tmp_path / "a.json").write_text("{}")
    argv = [a.format(missing=tmp_path / "no-such-folder", tmp=tmp_path, file=tmp_path / "a.json") for a in argv]
    err = refuse(argv, capsys)
    assert err.count("\n") == 1 and err.startswith("sdpa-tui: error: "), err
    assert all(w in err for w in words), err


def test_output_files_in_an_existing_folder_are_accepted(tmp_path):
    args, _, _ = cli.parse(["report", "--json", str(tmp_path / "r.json"), "--markdown", str(tmp_path / "r.md")])
    assert args.json.endswith("r.json")
    assert list(tmp_path.iterdir()) == [], "the trial file made to check the folder is removed"
    assert cli.parse(["compare", "a.json", "b.json", "--json"])[0].json is True  # a switch there, not a path


@pytest.mark.parametrize("command", ["report", "sweep", "compare", "exporter", "serve"])
def test_every_subcommand_help_has_a_description_and_shows_defaults(command, capsys):
    with pytest.raises(SystemExit) as info:
        cli.parse([command, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert not out.split("\n\n")[1].startswith(("options:", "positional")), out  # a description under the usage
    text = " ".join(out.split())
    if command != "compare":
        assert "forward, or forward+backward (default fwd)" in text
    if command == "serve":
        assert "where snapshots go (default ./sdpa-tui-exports)" in text and "(default 1024; 0: never)" in text


def test_sweep_help_says_its_seq_is_required(capsys):
    with pytest.raises(SystemExit):
        cli.parse(["sweep", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--seq LIST|A:B required: the query lengths" in out


def test_ctrl_c_in_report_is_one_line_and_exit_130(tmp_path):
    """It printed a 35-line traceback: one line now, the engine process ended with it."""
    import signal

    from support.processes import alive, engine_of

    root = REPO
    proc = subprocess.Popen([sys.executable, "-m", "sdpa_tui", "report", "--device", "cpu", "--duration", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**os.environ, "PYTHONPATH": str(root)})
    try:
        # the engine is starting or measuring
        started = wait_until(lambda: engine_of(proc.pid), 60, "report's engine process")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1] == "sdpa-tui: interrupted; nothing is reported" and "Traceback" not in err, err
    wait_until(lambda: not alive(started), 10, f"the engine process {started} gone with report")

