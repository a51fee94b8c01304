"""The control API's token and the DNS-rebinding guard on the Host header."""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from roundhouse.server.problems import problem_response

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def write_token(path: Path) -> str:
    """Create a fresh token in a file only this user can read, and return it."""
    token = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    # O_EXCL with mode 0600 means the file is never readable by others, not even briefly.
    # On Windows the mode is ignored and the per-user profile folder's ACL protects it.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(token)
    return token


def host_without_port(host_header: str) -> str:
    """`[::1]:8080` -> `::1`, `localhost:8080` -> `localhost`, lower-cased."""
    host = host_header.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[1:end] if end > 0 else host
    if host.count(":") == 1:
        return host.split(":", 1)[0]
    return host


def host_allowed(host_header: str | None, allowed: frozenset[str] = LOOPBACK_HOSTS) -> bool:
    if not host_header:
        return False
    host = host_without_port(host_header)
    return host in allowed or host.endswith(".localhost")


def token_matches(authorization: str | None, token: str) -> bool:
    if not authorization or not authorization.startswith("Bearer "):
        return False
    return hmac.compare_digest(authorization.removeprefix("Bearer ").strip(), token)


class HostGuard:
    """Refuse any request whose Host is not loopback: a web page that rebinds its own DNS
    name to 127.0.0.1 still sends its own name as Host (the Ollama CVE-2024-28224 attack)."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str] = LOOPBACK_HOSTS) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            host = None
            for name, value in scope["headers"]:
                if name == b"host":
                    host = value.decode("latin-1")
                    break
            if not host_allowed(host, self.allowed):
                response = problem_response(
                    403,
                    "Forbidden host",
                    f"Requests for host {host!r} are refused: the Roundhouse daemon answers "
                    "only to localhost addresses.",
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
