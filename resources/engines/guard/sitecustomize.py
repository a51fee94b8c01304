"""Roundhouse's guard inside a Python engine: only the daemon, with the instance's key, is served.

Roundhouse starts mlx_lm.server, vLLM and SGLang with this folder on PYTHONPATH and the
instance's key in ROUNDHOUSE_ENGINE_KEY. Python imports `sitecustomize` at start-up in the
engine's process (and in every Python process it starts), and this module then makes the
engine's HTTP server refuse, before any route runs:

- a request without the key (`Authorization: Bearer <key>` or `x-api-key: <key>`): 401;
- a request whose Host is not a loopback name (DNS rebinding): 403;
- a request that carries an Origin header (a web page; the daemon never sends one): 403.

Refusals carry no CORS header, so a web page can read nothing. Two servers are covered:
the standard library's http.server (mlx_lm.server) and uvicorn (vLLM, SGLang), whose
loaded ASGI application is wrapped. Standard library only: it runs in the engine's Python.
"""

from __future__ import annotations

import hmac
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from pathlib import Path
from typing import Any

KEY_ENV = "ROUNDHOUSE_ENGINE_KEY"
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def host_name(host: str) -> str:
    """`[::1]:8080` -> `::1`, `127.0.0.1:8080` -> `127.0.0.1`, lower-cased.

    The daemon's security.host_without_port does the same; this file runs in the engine's
    Python, which has no Roundhouse to import."""
    host = host.strip().lower()
    if host.startswith("["):
        end = host.find("]")
        return host[1:end] if end > 0 else host
    if host.count(":") == 1:
        return host.split(":", 1)[0]
    return host


def offered_keys(authorization: Iterable[bytes], api_key: Iterable[bytes]) -> list[bytes]:
    """The keys a request offers: bearer tokens, then x-api-key values."""
    found = []
    for value in authorization:
        scheme, _, rest = value.strip().partition(b" ")
        if scheme.lower() == b"bearer":
            found.append(rest.strip())
    found.extend(value.strip() for value in api_key)
    return found


def refusal(
    key: bytes,
    host: bytes | None,
    origin: bytes | None,
    authorization: Sequence[bytes],
    api_key: Sequence[bytes],
) -> tuple[int, bytes] | None:
    """None when the request may be served, else the status and JSON body that refuse it."""
    if origin is not None:
        return _answer(403, "This engine is reached through Roundhouse only, never by a web page.")
    if host is None or host_name(host.decode("latin-1")) not in _LOOPBACK_HOSTS:
        return _answer(403, "This engine answers only to loopback host names.")
    if not any(hmac.compare_digest(offer, key) for offer in offered_keys(authorization, api_key)):
        return _answer(401, "This engine is reached through Roundhouse only: the key is missing.")
    return None


def _answer(status: int, message: str) -> tuple[int, bytes]:
    kind = "authentication_error" if status == 401 else "permission_error"
    body = {"error": {"message": message, "type": kind, "code": status}}
    return status, json.dumps(body).encode()


class AsgiGuard:
    """The ASGI application, behind the checks; lifespan events pass untouched."""

    def __init__(self, app: AsgiApp, key: bytes) -> None:
        self.app = app
        self.key = key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers: dict[bytes, list[bytes]] = {}
            for name, value in scope.get("headers", ()):
                headers.setdefault(bytes(name).lower(), []).append(bytes(value))
            refused = refusal(
                self.key,
                _first(headers.get(b"host")),
                _first(headers.get(b"origin")),
                headers.get(b"authorization", []),
                headers.get(b"x-api-key", []),
            )
            if refused is not None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                status, body = refused
                await send(
                    {
                        "type": "http.response.start",
                        "status": status,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _first(values: list[bytes] | None) -> bytes | None:
    return values[0] if values else None


def guard_http_server(key: bytes) -> None:
    """Every http.server handler checks each request once its headers are parsed."""
    import http.server

    handler = http.server.BaseHTTPRequestHandler
    original = handler.parse_request

    def parse_request(self: http.server.BaseHTTPRequestHandler) -> bool:
        if not original(self):
            return False

        def raw(name: str) -> list[bytes]:
            return [v.encode("latin-1", "replace") for v in self.headers.get_all(name) or ()]

        refused = refusal(
            key,
            _first(raw("Host")),
            _first(raw("Origin")),
            raw("Authorization"),
            raw("X-Api-Key"),
        )
        if refused is None:
            return True
        status, body = refused
        # The body, if any, is left unread: the connection closes after the answer.
        self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        return False

    handler.parse_request = parse_request  # type: ignore[method-assign]


def guard_uvicorn(module: Any, key: bytes) -> None:
    """uvicorn's Config wraps the application it loads in the guard, outside every other
    middleware (CORS included), so a refusal carries no CORS header."""
    config = module.Config
    original = config.load

    def load(self: Any) -> None:
        original(self)
        self.loaded_app = AsgiGuard(self.loaded_app, key)

    config.load = load


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls `patch(module)` right after `name` is first imported."""

    def __init__(self, name: str, patch: Callable[[Any], None]) -> None:
        self.name = name
        self.patch = patch

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        run = loader.exec_module
        patch = self.patch

        def exec_module(module: Any) -> None:
            run(module)
            patch(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _chain_next_sitecustomize() -> None:
    """Run the sitecustomize this one shadows (an environment's own), as Python would have."""
    here = Path(__file__).resolve().parent
    rest = [p for p in sys.path if Path(p or ".").resolve() != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def install() -> None:
    key = os.environ.get(KEY_ENV, "")
    if key:
        secret = key.encode()
        guard_http_server(secret)
        if "uvicorn.config" in sys.modules:
            guard_uvicorn(sys.modules["uvicorn.config"], secret)
        else:
            patch = _AfterImport("uvicorn.config", lambda m: guard_uvicorn(m, secret))
            sys.meta_path.insert(0, patch)
    _chain_next_sitecustomize()


install()
