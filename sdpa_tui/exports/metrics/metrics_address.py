"""Where the metrics endpoint listens: defaults and checks (standard library only, cheap to import)."""

from __future__ import annotations

import ipaddress

DEFAULT_ADDRESS = "127.0.0.1"
"""Loopback: another address (0.0.0.0, a LAN address) only when the user names it."""
DEFAULT_PORT = 9468


def check_address(address: str) -> str:
    """An IP address to listen on (``localhost`` means 127.0.0.1); ValueError otherwise."""
    if address == "localhost":
        return DEFAULT_ADDRESS
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        raise ValueError(f"the metrics address must be an IP address such as 127.0.0.1, got {address!r}") from None


def check_port(port: int) -> int:
    if not 0 <= port <= 65535:
        raise ValueError(f"the metrics port must be from 0 (any free port) to 65535, got {port}")
    return port


def is_loopback(address: str) -> bool:
    """True for 127.0.0.0/8 and ::1: only this machine can connect."""
    return ipaddress.ip_address(address).is_loopback
