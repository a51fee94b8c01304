"""The control API's token, the DNS-rebinding guard on the Host header, and the gateway's
API key check (required of every peer beyond loopback), Host allowlist and CORS."""

from __future__ import annotations

import functools
import hmac
import ipaddress
import os
import secrets
import socket
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import psutil
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from roundhouse.server.problems import problem_response

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
LOOPBACK_ONLY = "the Roundhouse daemon answers only to localhost addresses"
# Where clients put an OpenAI-style key: the bearer token, or the header some clients send.
_KEY_HEADERS = (b"authorization", b"x-api-key")
# Where the gateway serves Anthropic's API: refusals there are in its shape.
ANTHROPIC_PREFIX = "/v1/messages"


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
    given = authorization.removeprefix("Bearer ").strip()
    # Bytes, not str: compare_digest raises on non-ASCII str, which a client can send (a 500
    # where a 401 belongs); such a value never equals the ASCII token.
    return hmac.compare_digest(given.encode(), token.encode())


class HostGuard:
    """Refuse any request whose Host is not loopback: a web page that rebinds its own DNS
    name to 127.0.0.1 still sends its own name as Host (the Ollama CVE-2024-28224 attack)."""

    def __init__(
        self, app: ASGIApp, allowed: frozenset[str] = LOOPBACK_HOSTS, answers: str = LOOPBACK_ONLY
    ) -> None:
        self.app = app
        self.allowed = allowed
        self.answers = answers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            host = _header(scope, b"host")
            if not host_allowed(host, self.allowed):
                detail = f"Requests for host {host!r} are refused: {self.answers}."
                response = problem_response(403, "Forbidden host", detail)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope["headers"]:
        if name == wanted:
            text: str = value.decode("latin-1")
            return text
    return None


# A path, or several (e.g. /v1 and Ollama's /api/... routes); None: every path.
Prefixes = str | tuple[str, ...] | None


def under_prefix(path: str, prefix: Prefixes) -> bool:
    """Whether `path` is `prefix` (one of them) or below it; every path when there is none."""
    if prefix is None:
        return True
    if isinstance(prefix, str):
        return path == prefix or path.startswith(prefix + "/")
    return any(path == p or path.startswith(p + "/") for p in prefix)


def is_ollama_path(path: str) -> bool:
    """Ollama's API (/api/chat...), whose clients read `{"error": "..."}`; /api/v1 is the
    daemon's own control API."""
    return path.startswith("/api/") and not under_prefix(path, "/api/v1")


def ollama_auth_error(message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=401, headers={"WWW-Authenticate": "Bearer"})


def presented_keys(scope: Scope) -> list[bytes]:
    """What the request offers as a key: `Authorization: Bearer <key>` and `x-api-key`."""
    found = []
    for name, value in scope["headers"]:
        if name not in _KEY_HEADERS:
            continue
        if name == b"authorization":
            scheme, _, rest = value.partition(b" ")
            if scheme.lower() != b"bearer":
                continue
            value = rest
        found.append(value.strip())
    return found


def key_accepted(offered: list[bytes], accepted: Iterable[str]) -> bool:
    # Bytes, not str: compare_digest refuses non-ASCII str, and headers are bytes anyway.
    return any(
        hmac.compare_digest(value, key.encode()) for value in offered for key in accepted if key
    )


def anthropic_auth_error(message: str) -> JSONResponse:
    return JSONResponse(
        {"type": "error", "error": {"type": "authentication_error", "message": message}},
        status_code=401,
        headers={"WWW-Authenticate": "Bearer"},
    )


def openai_auth_error(message: str) -> JSONResponse:
    return JSONResponse(
        {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        },
        status_code=401,
        headers={"WWW-Authenticate": "Bearer"},
    )


@functools.lru_cache(maxsize=1024)
def _loopback_address(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False  # a name (from X-Forwarded-For) proves nothing: judged as remote
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1 on a dual-stack socket
    return address.is_loopback


def peer_is_local(scope: Scope) -> bool:
    """Whether the request comes from this machine's loopback, judged by the connection's
    peer address (never the Host header, which the client writes)."""
    client = scope.get("client")
    return client is not None and _loopback_address(client[0])


NO_KEY_FOR_REMOTE = (
    "This Roundhouse gateway was reached from another machine ({peer}), and that needs the "
    "gateway API key, which is not set. On the Roundhouse machine, set one (Generate on the "
    "Settings page, or `roundhouse gateway key --generate`), then send it as "
    "'Authorization: Bearer <key>'."
)


class KeyGuard:
    """Refuse requests that do not carry the gateway key, or one of `also` (the daemon's own
    token on the daemon's listener): under `prefix` (all, if None) while a key is set, and
    on every path from a peer beyond loopback, key set or not (then nothing is accepted but
    `also`, and the answer says to set a key)."""

    def __init__(
        self,
        app: ASGIApp,
        key: Callable[[], str | None],
        *,
        also: Callable[[], str | None] = lambda: None,
        prefix: Prefixes = None,
    ) -> None:
        self.app = app
        self.key = key
        self.also = also
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        key = self.key()
        local = peer_is_local(scope)
        if local and (key is None or not under_prefix(scope["path"], self.prefix)):
            await self.app(scope, receive, send)
            return
        offered = presented_keys(scope)
        if key_accepted(offered, (key or "", self.also() or "")):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if key is None:
            client = scope.get("client")
            message = NO_KEY_FOR_REMOTE.format(peer=client[0] if client else "unknown address")
        elif offered:
            message = (
                "Incorrect API key provided. Use the key Roundhouse showed when it was set, "
                "or set a new one with `roundhouse gateway key --generate`."
            )
        else:
            message = (
                "This Roundhouse gateway needs an API key: send it as "
                "'Authorization: Bearer <key>' or 'x-api-key: <key>'. Set one with "
                "`roundhouse gateway key --generate`."
            )
        if under_prefix(scope["path"], ANTHROPIC_PREFIX):
            # Anthropic's clients (Claude Code) read their own error shape.
            await anthropic_auth_error(message)(scope, receive, send)
            return
        if is_ollama_path(scope["path"]):
            await ollama_auth_error(message)(scope, receive, send)
            return
        await openai_auth_error(message)(scope, receive, send)


def normal_origins(origins: Iterable[str]) -> tuple[str, ...]:
    # Lower case: browsers send scheme and host so, and CORSMiddleware compares exactly.
    return tuple(dict.fromkeys(o.strip().rstrip("/").lower() for o in origins if o.strip()))


def allowed_origins(origins: Iterable[str], key_set: bool) -> tuple[str, ...]:
    """The origins that count now: `*` only while a key is set (saving it without one is
    refused; this covers a settings file edited by hand)."""
    normal = normal_origins(origins)
    if "*" in normal and not key_set:
        return tuple(o for o in normal if o != "*")
    return normal


class GatewayCors:
    """CORS headers under `prefix` for the origins the settings list, read at each request so
    a change counts at once; a request from any other origin gets none (nor a preflight)."""

    def __init__(
        self, app: ASGIApp, origins: Callable[[], Sequence[str]], prefix: Prefixes = None
    ) -> None:
        self.app = app
        self.origins = origins
        self.prefix = prefix
        self._cors: tuple[tuple[str, ...], ASGIApp] | None = None

    def _middleware(self, origins: tuple[str, ...]) -> ASGIApp:
        if self._cors is None or self._cors[0] != origins:
            cors = CORSMiddleware(
                self.app,
                allow_origins=origins,
                allow_methods=("GET", "POST", "OPTIONS"),
                # Mirrored back: OpenAI's SDKs send many headers of their own.
                allow_headers=("*",),
                # Never with credentials: the key is a header, not a cookie.
                allow_credentials=False,
            )
            self._cors = (origins, cors)
        return self._cors[1]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and under_prefix(scope["path"], self.prefix):
            origin = _header(scope, b"origin")
            origins = normal_origins(self.origins())
            if origin is not None and ("*" in origins or origin.rstrip("/").lower() in origins):
                await self._middleware(origins)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps a listener on this machine alone."""
    host = host.strip().strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def machine_hosts(listen_host: str, allowed: Iterable[str] = ()) -> frozenset[str]:
    """The Host values the second listener answers to: loopback names, the address it binds,
    this machine's name (and `<name>.local`), its interface addresses, and `allowed`."""
    names = set(LOOPBACK_HOSTS)
    bound = listen_host.strip().strip("[]").lower()
    if bound not in ("", "0.0.0.0", "::"):
        names.add(bound)
    hostname = socket.gethostname().lower()
    if hostname:
        short = hostname.split(".", 1)[0]
        names.update({hostname, short, f"{short}.local"})
    try:
        interfaces = psutil.net_if_addrs()
    except (OSError, psutil.Error):
        interfaces = {}
    for addresses in interfaces.values():
        for address in addresses:
            if address.family in (socket.AF_INET, socket.AF_INET6):
                # fe80::1%eth0: the zone never appears in a Host header.
                names.add(address.address.split("%", 1)[0].lower())
    names.update(host_without_port(a) for a in allowed if a.strip())
    return frozenset(names)
