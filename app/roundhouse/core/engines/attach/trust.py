"""Whose an engine found running is, and where it listens: which ones the scan may adopt.

    why = owner_problem(process) or exposure_problem(listening)   # None: adopt it

An engine the scan adopts is routed to without asking, so it must be the user's own (or a
service an administrator set up) and reachable from this machine only: another person's
process could read every prompt sent to it, and one listening beyond loopback is anyone's on
the network. Each function returns None when all is well, else why not, in words that fit
after "it": "runs as another user (bob)".
"""

from __future__ import annotations

import os
import socket
import struct
import sys
from collections.abc import Iterable
from pathlib import Path

import psutil

from roundhouse.base.hosts import is_loopback_host

# Accounts below this uid are the system's own: services an administrator set up (the
# packaged Ollama on Linux runs as `ollama`), which only root can run programs as. People's
# accounts start here (UID_MIN in login.defs; 501 on macOS).
FIRST_PERSON_UID = 501 if sys.platform == "darwin" else 1000
# Windows' service accounts, as psutil names them.
_WINDOWS_SERVICES = frozenset(
    {"nt authority\\system", "nt authority\\local service", "nt authority\\network service"}
)
# The owner of a process or socket the system does not show (another user's, mostly).
UNKNOWN_OWNER = "runs as a user the system does not name to Roundhouse"
_UNSPECIFIED = frozenset({"0.0.0.0", "::", "*", ""})
_PROC_NET = Path("/proc/net")
_TCP_LISTEN = "0A"


def owner_problem(process: psutil.Process) -> str | None:
    """None when `process` runs as the user this daemon runs as, or as a system service
    account; else why it is left out."""
    try:
        if sys.platform == "win32":
            user = process.username()
            me = psutil.Process().username()
            if user.lower() == me.lower() or user.lower() in _WINDOWS_SERVICES:
                return None
            return f"runs as another user ({user})"
        uid = process.uids().real
    except psutil.AccessDenied:
        return UNKNOWN_OWNER
    return uid_problem(uid)


def uid_problem(uid: int) -> str | None:
    """None for this user's uid or a system account's; else why it is left out (POSIX)."""
    if sys.platform == "win32" or uid == os.getuid() or uid < FIRST_PERSON_UID:
        return None
    return f"runs as another user ({_user_name(uid)})"


def _user_name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def exposure_problem(listening: Iterable[tuple[str, int]]) -> str | None:
    """None when every (address, port) is on loopback; else where it listens beyond."""
    beyond = sorted({_shown(ip, port) for ip, port in listening if not is_loopback_host(ip)})
    if not beyond:
        return None
    return (
        f"listens on {', '.join(beyond)}, beyond this machine's loopback, so other machines "
        "can reach it"
    )


def _shown(ip: str, port: int) -> str:
    if ip in _UNSPECIFIED:
        return f"{ip or '*'}:{port} (every address of this machine)"
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def socket_listeners(port: int) -> list[tuple[str, int]] | None:
    """(address, owner uid) of each TCP socket listening on `port`, from Linux's /proc/net,
    which shows every user's sockets (psutil hides their pids); None elsewhere."""
    found: list[tuple[str, int]] = []
    read_any = False
    for name, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        try:
            lines = (_PROC_NET / name).read_text().splitlines()[1:]
        except OSError:
            continue
        read_any = True
        for line in lines:
            fields = line.split()
            if len(fields) < 8 or fields[3] != _TCP_LISTEN:
                continue
            address, _, port_hex = fields[1].partition(":")
            try:
                if int(port_hex, 16) != port:
                    continue
                found.append((_proc_address(address, family), int(fields[7])))
            except (ValueError, OSError, struct.error):
                continue
    return found if read_any else None


def _proc_address(hex_text: str, family: int) -> str:
    """An address as /proc/net writes it: 32-bit words in this machine's byte order."""
    words = [int(hex_text[i : i + 8], 16) for i in range(0, len(hex_text), 8)]
    return socket.inet_ntop(family, b"".join(struct.pack("=I", word) for word in words))


def not_adopted(owner: str | None, exposure: str | None) -> str | None:
    """Why an engine is left out and what the user can do, from the two checks; None when
    both passed."""
    if owner:
        return (
            f"it {owner}. Roundhouse adopts only engines that run as you (or as a system "
            "service); attach its URL if you trust it"
        )
    if exposure:
        return (
            f"it {exposure}. Restart it listening on 127.0.0.1 only, or start the model from "
            "Roundhouse; attach its URL to use it as it is"
        )
    return None
