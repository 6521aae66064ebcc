"""``sdpa-tui serve``: where it listens, what it refuses, and the command line each browser
session runs (the browser itself: test_serve_browser.py)."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from support.paths import REPO

from sdpa_tui import cli
from sdpa_tui.commands import serve
from sdpa_tui.engine.host.client import descendants

PASS_THROUGH = [
    [],
    ["--heads", "16", "--kv-heads", "2", "--seq", "1024", "--kv-seq", "256", "--head-dim", "128"],
    ["--dtype", "bf16", "--causal", "--direction", "fwd+bwd", "--device", "cuda:1"],
    ["--mask", "padding", "--backends", "flash,math", "--legacy-api", "--device", "cpu"],
    ["--priority", "math,flash,cudnn", "--engine-memory-mib", "0", "--export-dir", "shots here"],
]


def parsed(argv: list[str]):
    args, workload, backends = cli.parse(argv)
    return workload, backends, args.device, args.legacy_api, args.priority, args.export_dir, args.engine_memory_mib


@pytest.mark.parametrize("options", PASS_THROUGH)
def test_the_served_app_gets_the_same_workload_and_flags(options):
    args, workload, backends = cli.parse(["serve", *options])
    argv = shlex.split(serve.app_command(args, workload, backends))
    assert argv[:3] == [sys.executable, "-m", "sdpa_tui"]
    served = parsed(argv[3:])
    given = parsed(options)
    assert served[:5] == given[:5]
    assert served[5] == os.path.abspath(given[5])
    assert served[6] == given[6]


def test_options_before_serve_pass_through_too():
    args, workload, backends = cli.parse(["--seq", "128", "--dtype", "fp32", "serve", "--port", "9000"])
    served = parsed(shlex.split(serve.app_command(args, workload, backends))[3:])
    assert (served[0].seq, served[0].dtype) == (128, "fp32")


def test_the_shell_passes_every_argument_unchanged(tmp_path, monkeypatch):
    """textual-serve runs the command through /bin/sh: quoting must survive spaces, quotes,
    ``$( )`` and ``;`` in a path, and in the interpreter's own path."""
    record = tmp_path / "argv.bin"
    interpreter = tmp_path / "a dir; with $(touch pwned) 'quotes'" / "python"
    interpreter.parent.mkdir()
    interpreter.write_text(f"#!/bin/sh\nprintf '%s\\0' \"$@\" > {shlex.quote(str(record))}\n")
    interpreter.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(interpreter))
    export_dir = str(tmp_path / 'out "x" $(touch pwned); echo')
    args, workload, backends = cli.parse(["serve", "--export-dir", export_dir, "--seq", "64"])
    subprocess.run(serve.app_command(args, workload, backends), shell=True, check=True, cwd=tmp_path)
    argv = record.read_bytes().split(b"\0")[:-1]
    assert [a.decode() for a in argv] == ["-m", "sdpa_tui", *serve.app_argv(args, workload, backends)]
    assert export_dir in [a.decode() for a in argv]
    assert not (tmp_path / "pwned").exists()


def test_loopback_and_8467_by_default():
    args, _, _ = cli.parse(["serve"])
    assert (args.address, args.port, args.public_url) == ("127.0.0.1", 8467, None)


def one_error_line(argv: list[str], capsys) -> str:
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sdpa-tui: error: "), captured.err
    assert captured.out == ""
    return lines[0]


def test_a_port_in_use_is_one_line_and_exit_2(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_error_line(["serve", "--port", str(port)], capsys)
    assert f"port {port} on 127.0.0.1 is in use" in line


@pytest.mark.parametrize(("argv", "says"), [
    (["serve", "--address", "192.0.2.7"], "not an address of this machine"),  # TEST-NET-1
    (["serve", "--address", "no-such-host.invalid"], "not an address of this machine"),
    (["serve", "--address", "0.0.0.0"], "--public-url"),
    (["serve", "--port", "0"], "--port must be 1 to 65535"),
    (["serve", "--port", "70000"], "--port must be 1 to 65535"),
    (["serve", "--public-url", "gpu-box:8467"], "--public-url must start with http:// or https://"),
])
def test_addresses_it_cannot_serve_on_are_one_line_and_exit_2(argv, says, capsys):
    assert says in one_error_line(argv, capsys)


def test_a_bad_workload_is_refused_before_serving(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["serve", "--heads", "8", "--kv-heads", "3"])
    assert info.value.code == 2
    assert "kv" in capsys.readouterr().err


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_page_is_served_on_the_loopback_only(tmp_path):
    """The real server: the page names the websocket on 127.0.0.1; 127.0.0.2 (also the loopback
    interface, another address) is refused, so it did not bind every address."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    server = subprocess.Popen([sys.executable, "-m", "sdpa_tui", "serve", "--device", "cpu", "--port", str(port)],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = server.stdout.readline()
        assert first.startswith(f"sdpa-tui: serving the monitor on http://127.0.0.1:{port} "), first
        page = ""
        for _ in range(50):
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read().decode()
                break
            except OSError:
                time.sleep(0.2)
        assert f'data-session-websocket-url="ws://127.0.0.1:{port}/ws"' in page
        with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.2", port), timeout=5):
            pass
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert server.returncode == 0
    assert err == ""


def app_process(extra_env: dict[str, str]) -> subprocess.Popen:
    env = {**os.environ, **extra_env,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-m", "sdpa_tui", "--device", "cpu", "--seq", "64"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_without_a_terminal_the_monitor_refuses_unless_textual_serve_started_it():
    plain = app_process({"TEXTUAL_DRIVER": ""})
    out, err = plain.communicate(timeout=60)
    assert plain.returncode == 2 and b"no terminal here" in err

    served = app_process({"TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver"})
    try:
        assert served.stdout.readline() == b"__GANGLION__\n"  # textual-serve's sign of a Textual app
    finally:
        served.stdin.close()  # what the session sees if the server goes away
        served.wait(timeout=60)
    assert b"the terminal was closed" in served.stderr.read()


def trackers_under(pid: int) -> list[int]:
    """multiprocessing's resource trackers among ``pid``'s descendants."""
    found = []
    for kid in sorted(descendants(pid)):
        with contextlib.suppress(OSError):
            if b"resource_tracker" in Path(f"/proc/{kid}/cmdline").read_bytes():
                found.append(kid)
    return found


def pipes_held(pid: int) -> set[str]:
    """The pipes ``pid`` holds as stdin, stdout or stderr (``pipe:[inode]``)."""
    held = set()
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            held.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return {link for link in held if link.startswith("pipe:")}


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc")
def test_a_served_sessions_resource_tracker_holds_none_of_its_pipes():
    """multiprocessing's resource tracker outlives the app by a moment: holding the session's pipes, it kept the
    server from seeing the session end, and a server stopped then printed a traceback as it exited."""
    served = app_process({"TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver"})
    try:
        assert served.stdout.readline() == b"__GANGLION__\n"
        session_pipes = pipes_held(served.pid)
        assert len(session_pipes) == 3
        trackers = trackers_under(served.pid)
        assert trackers, "no resource tracker among the app's children"
        for pid in trackers:
            assert not pipes_held(pid) & session_pipes
    finally:
        served.stdin.close()
        served.wait(timeout=60)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc")
def test_a_server_stopped_as_a_session_ends_exits_without_a_traceback(tmp_path):
    """The failure this guards, made certain: a session ends (its app exits) while the app's resource tracker is
    held stopped, then the server is stopped. A tracker holding the session's pipes left them open past the
    server's event loop: 'Exception ignored ... Event loop is closed' on its stderr."""
    import asyncio

    import aiohttp

    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    server = subprocess.Popen([sys.executable, "-m", "sdpa_tui", "serve", "--device", "cpu", "--seq", "64",
                               "--port", str(port)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    tracker = None

    async def one_session() -> None:
        nonlocal tracker
        async with aiohttp.ClientSession() as client:
            for _ in range(100):  # the line above is printed just before the server listens
                with contextlib.suppress(aiohttp.ClientConnectionError):
                    ws = await client.ws_connect(f"http://127.0.0.1:{port}/ws?width=80&height=24")
                    break
                await asyncio.sleep(0.1)
            await ws.receive(timeout=60)  # the app's first output: it has started its tracker
            [tracker] = trackers_under(server.pid)
            os.kill(tracker, signal.SIGSTOP)
            await ws.close()

    try:
        assert server.stdout.readline().startswith("sdpa-tui: serving the monitor")
        asyncio.run(one_session())
        deadline = time.monotonic() + 60
        while descendants(server.pid):  # the app and its engine exit; the stopped tracker is left to init
            assert time.monotonic() < deadline, f"the session's processes did not exit: {sorted(descendants(server.pid))}"
            time.sleep(0.05)
        server.terminate()
        _, err = server.communicate(timeout=30)
    finally:
        if tracker is not None:
            os.kill(tracker, signal.SIGCONT)
        server.kill()
    assert server.returncode == 0
    assert err == ""
