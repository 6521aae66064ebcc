"""Command-line options of the metrics endpoint (cheap to import: the CLI builds its parser with them)."""

from __future__ import annotations

import argparse

from ..exports.metrics.metrics_address import DEFAULT_ADDRESS, DEFAULT_PORT, check_address, check_port


def add_exporter_options(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("exporter")
    g.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port of the /metrics endpoint (default {DEFAULT_PORT}; 0: any free port)")
    g.add_argument("--address", default=DEFAULT_ADDRESS,
                   help=f"address to listen on (default {DEFAULT_ADDRESS}: this machine only; "
                   "0.0.0.0 lets other hosts scrape it)")


def add_live_metrics_options(parser: argparse.ArgumentParser) -> None:
    """``--metrics-port`` / ``--metrics-address`` of the live monitor."""
    parser.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                        help="also serve Prometheus metrics on this port while the monitor runs (default: off)")
    parser.add_argument("--metrics-address", default=None, metavar="ADDRESS",
                        help=f"address for --metrics-port (default {DEFAULT_ADDRESS}: this machine only)")


def check_live_metrics_options(args: argparse.Namespace) -> None:
    """Raise ValueError for a bad ``--metrics-port`` / ``--metrics-address``; fill in the address."""
    if args.metrics_port is None:
        if args.metrics_address is not None:
            raise ValueError("--metrics-address needs --metrics-port")
        return
    check_port(args.metrics_port)
    args.metrics_address = check_address(args.metrics_address or DEFAULT_ADDRESS)
