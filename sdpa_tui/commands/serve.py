"""``sdpa-tui serve``: the live monitor in a browser, served by textual-serve.

textual-serve starts one app process per browser session, from a shell command line. That
line is built here from the options already parsed and validated (a bad workload is refused
before anything is served), quoted with :func:`shlex.join`, and runs the same Python
interpreter as this process, so the served app is the code that parsed the options.

It binds to 127.0.0.1 unless ``--address`` says otherwise: whoever reaches the port can
start an engine on this machine's GPU.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import os
import shlex
import socket
import sys

from ..core.backends import Backend
from ..core.workload import Workload
from .exit_codes import EXIT_USAGE

DEFAULT_PORT = 8467
DEFAULT_ADDRESS = "127.0.0.1"

def app_argv(args: argparse.Namespace, workload: Workload, backends: tuple[Backend, ...]) -> list[str]:
    """The ``sdpa-tui`` arguments that reproduce the parsed workload and flags."""
    argv = [
        "--batch", str(workload.batch), "--heads", str(workload.heads), "--kv-heads", str(workload.kv_heads),
        "--seq", str(workload.seq), "--kv-seq", str(workload.kv_seq), "--head-dim", str(workload.head_dim),
        "--dtype", workload.dtype, "--mask", workload.mask, "--direction", workload.direction,
        "--device", args.device, "--backends", ",".join(b.short for b in backends),
        "--export-dir", os.path.abspath(os.path.expanduser(args.export_dir)),
        "--engine-memory-mib", repr(float(args.engine_memory_mib)),
    ]
    if args.legacy_api:
        argv.append("--legacy-api")
    if args.priority:
        argv += ["--priority", ",".join(b.short for b in args.priority)]
    return argv


def app_command(args: argparse.Namespace, workload: Workload, backends: tuple[Backend, ...]) -> str:
    """The shell command line textual-serve runs for each browser session."""
    return shlex.join([sys.executable, "-m", "sdpa_tui", *app_argv(args, workload, backends)])


def check_address(address: str, port: int, public_url: str | None) -> str | None:
    """Why the server cannot listen there (one line), or None when it can."""
    if not 0 < port < 65536:
        return f"--port must be 1 to 65535, got {port}"
    if public_url is not None and not public_url.startswith(("http://", "https://")):
        return f"--public-url must start with http:// or https://, got {public_url!r}"
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"--address {address!r} is not an address of this machine ({exc.strerror})"
    try:
        if ipaddress.ip_address(address).is_unspecified and not public_url:
            return (f"--address {address} listens everywhere, but the page would tell the browser to connect "
                    f"to {address}: also give --public-url http://HOST:{port}")
    except ValueError:  # a host name
        pass
    family, kind, proto, _, sockaddr = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp does
        try:
            probe.bind(sockaddr)
        except OSError as exc:
            return _bind_error(address, port, exc)
    return None


def _bind_error(address: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} on {address} is in use: choose another with --port"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"--address {address} is not an address of this machine"
    if exc.errno == errno.EACCES:
        return f"no permission to listen on port {port} (ports below 1024 need privileges)"
    return f"cannot listen on {address}:{port}: {exc.strerror or exc}"


def run_serve(args: argparse.Namespace, workload: Workload, backends: tuple[Backend, ...]) -> int:
    problem = check_address(args.address, args.port, args.public_url)
    if problem:
        print(f"sdpa-tui: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    from textual_serve.server import Server

    class MonitorServer(Server):
        async def on_startup(self, app: object) -> None:  # one line instead of textual-serve's banner
            print(f"sdpa-tui: serving the monitor on {self.public_url} (one engine per browser tab; "
                  "Ctrl+C stops)", flush=True)

    server = MonitorServer(app_command(args, workload, backends), host=args.address, port=args.port,
                           title="sdpa-tui", public_url=args.public_url)
    try:
        server.serve()
    except OSError as exc:  # lost a race for the port after the check
        print(f"sdpa-tui: error: {_bind_error(args.address, args.port, exc)}", file=sys.stderr)
        return EXIT_USAGE
    return 0
