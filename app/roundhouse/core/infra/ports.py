"""Bind listening sockets, and name the process that holds a port when it is taken."""

from __future__ import annotations

import errno
import os
import socket
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class PortOwner:
    pid: int
    name: str

    def __str__(self) -> str:
        return f"{self.name} (pid {self.pid})"


class PortInUseError(OSError):
    """The port cannot be had: taken by another process, or privileged (`privileged`)."""

    def __init__(
        self, host: str, port: int, owner: PortOwner | None, *, privileged: bool = False
    ) -> None:
        who = f" by {owner}" if owner else ""
        message = f"Port {port} on {host} is already taken{who}."
        if privileged:
            message = (
                f"Port {port} on {host} needs administrator rights (ports below 1024 are "
                "privileged on this system): pick a port from 1024 up."
            )
        super().__init__(errno.EADDRINUSE, message)
        self.privileged = privileged
        self.host = host
        self.port = port
        self.owner = owner


# Ports the Fetch standard's "bad port" list bars: no browser sends a request there, from
# any page (fetch.spec.whatwg.org/#port-blocking). Those an unprivileged program may bind,
# the longest-standing first (4190 and 6679 joined the list in 2024). An engine that takes
# no key listens on one of them, so that no web page can reach it at all (ADR 21).
BROWSER_BLOCKED_PORTS = (
    6665, 6666, 6667, 6668, 6669, 6697, 10080, 1719, 1720, 1723, 3659, 5060, 5061, 6566,
    4045, 2049, 4190, 6679,
)  # fmt: skip


def free_port(host: str, *, browser_blocked: bool = False) -> int:
    """A port nothing listens on; with `browser_blocked`, one that no browser will reach when
    one is free (else any, which the caller's words must then not promise otherwise)."""
    for port in BROWSER_BLOCKED_PORTS if browser_blocked else ():
        try:
            listener = bind_listener(host, port)
        except OSError:
            continue
        listener.close()
        return port
    listener = bind_listener(host, 0)
    try:
        chosen: int = listener.getsockname()[1]
        return chosen
    finally:
        listener.close()


def port_owner(port: int) -> PortOwner | None:
    """The process listening on `port`, when the OS lets us see it (macOS needs root)."""
    try:
        connections = psutil.net_connections(kind="inet")
    except (psutil.AccessDenied, PermissionError):
        return None
    for conn in connections:
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
            if conn.pid is None:
                return None
            try:
                return PortOwner(conn.pid, psutil.Process(conn.pid).name())
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                return PortOwner(conn.pid, "unknown process")
    return None


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0 picks a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY only on sockets that say they are
    # TCP, and the connections accepted here inherit it. Without it a streamed reply's
    # headers and first event were held back by Nagle's algorithm for a delayed ACK (40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    # On POSIX SO_REUSEADDR only skips TIME_WAIT; on Windows it would let two servers share
    # a port, so it is set only where it is safe.
    if os.name != "nt":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.EADDRINUSE, errno.EACCES, getattr(errno, "WSAEADDRINUSE", -1)):
            owner = port_owner(port)
            # EACCES on POSIX is a privileged port; on Windows it is a port another process
            # holds exclusively, which is "taken".
            privileged = (
                exc.errno == errno.EACCES and os.name != "nt" and port < 1024 and owner is None
            )
            raise PortInUseError(host, port, owner, privileged=privileged) from exc
        raise
    sock.listen(128)
    return sock
