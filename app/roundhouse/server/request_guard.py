"""What every request to a listener passes before a route sees it: where a browser sent it
from (Origin, Sec-Fetch-Site), a JSON body on the gateway's POSTs, and a bounded body."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from roundhouse.server.problems import problem_response
from roundhouse.server.security import allowed_origins, is_ollama_path
from roundhouse.server.services import DaemonServices

log = logging.getLogger(__name__)

MIB = 1024 * 1024
# The gateway carries base64 images in chat requests: a few large photos fit.
GATEWAY_BODY_LIMIT = 64 * MIB
# The control API carries settings, presets and chats: text, a chat kept whole with a few of
# its longest messages (2 million characters each, up to 4 bytes a character) included.
CONTROL_BODY_LIMIT = 32 * MIB
# Paths that are the daemon's own (token-checked) API, answered to no web page at all.
# Every other path counts as the gateway's: /v1, and Ollama's /api/chat, /api/tags...
CONTROL_PREFIXES = ("/api/v1", "/metrics")
# A browser sends these on requests another site's page makes; no SDK sends them.
_FOREIGN_SITES = frozenset({b"cross-site", b"same-site"})
_JSON = b"application/json"


class BodyTooLarge(Exception):
    """The request's body went past its cap while it was read."""


def _is_json(content_type: bytes | None) -> bool:
    if content_type is None:
        return False
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == _JSON


def _same_origin(origin: str, host: bytes | None) -> bool:
    """A page the listener itself served (the daemon's /docs): its Origin is its Host."""
    if host is None:
        return False
    name = host.decode("latin-1").strip().lower()
    return origin in (f"http://{name}", f"https://{name}")


def origins_for(services: DaemonServices) -> Callable[[], tuple[str, ...]]:
    """`gateway.cors_origins` as they count now, recomputed only when they or the key change
    (read on every request)."""
    last: tuple[list[str], bool, tuple[str, ...]] | None = None

    def current() -> tuple[str, ...]:
        nonlocal last
        listed = services.settings.gateway.cors_origins
        key_set = services.gateway_key.is_set
        if last is None or last[1] != key_set or last[0] != listed:
            last = (list(listed), key_set, allowed_origins(listed, key_set))
            if "*" in (o.strip() for o in listed) and "*" not in last[2]:
                log.warning(
                    "gateway.cors_origins holds `*`, which counts only while a gateway key "
                    "is set: no key is, so it is ignored."
                )
        return last[2]

    return current


def _openai_refusal(status: int, message: str, code: str) -> JSONResponse:
    # The gateway's clients are OpenAI SDKs: the shape they show as an error.
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": code}
    return JSONResponse({"error": error}, status_code=status)


def _in_shape(refusal: JSONResponse, path: str) -> JSONResponse:
    """A gateway refusal in the shape of the API asked: Ollama's clients read `{"error":
    "..."}`, every other the OpenAI shape it was made in."""
    if not is_ollama_path(path):
        return refusal
    message = json.loads(bytes(refusal.body))["error"]["message"]
    return JSONResponse({"error": message}, status_code=refusal.status_code)


class RequestGuard:
    """Refuses, before any route runs or any body is read:

    - a request with an `Origin` that is not the listener's own nor, outside the control
      API, listed in `gateway.cors_origins` (403), and one a browser marks as sent by another
      site's page (`Sec-Fetch-Site`) with no Origin (403): web pages never drive the models
      or the daemon;
    - a gateway POST whose body is not `application/json` (415): a page can send
      `text/plain` without asking the browser first, never JSON;
    - a body over its cap (413): by `Content-Length` at once, else counted as it arrives.
    """

    def __init__(
        self,
        app: ASGIApp,
        origins: Callable[[], tuple[str, ...]],
        *,
        control_prefixes: Iterable[str] = (),
        gateway_body_limit: int = GATEWAY_BODY_LIMIT,
        control_body_limit: int = CONTROL_BODY_LIMIT,
    ) -> None:
        self.app = app
        self.origins = origins
        self._control = tuple(p for prefix in control_prefixes for p in (prefix, prefix + "/"))
        self._control_exact = frozenset(control_prefixes)
        self.gateway_body_limit = gateway_body_limit
        self.control_body_limit = control_body_limit

    def _is_control(self, path: str) -> bool:
        return bool(self._control) and (
            path in self._control_exact or path.startswith(self._control)
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind != "http" and kind != "websocket":
            await self.app(scope, receive, send)
            return
        origin = site = host = content_type = length = chunked = None
        for name, value in scope["headers"]:
            if name == b"origin":
                origin = value
            elif name == b"host":
                host = value
            elif name == b"content-type":
                content_type = value
            elif name == b"content-length":
                length = value
            elif name == b"sec-fetch-site":
                site = value
            elif name == b"transfer-encoding":
                chunked = value
        control = self._is_control(scope["path"])
        if origin is not None:
            refusal = self._origin_refusal(origin, host, control)
        elif site is not None and site.lower() in _FOREIGN_SITES:
            refusal = self._site_refusal(control)
        else:
            refusal = None
        if refusal is None and kind == "http":
            limit = self.control_body_limit if control else self.gateway_body_limit
            if not control and scope["method"] == "POST" and not _is_json(content_type):
                refusal = self._media_refusal(content_type)
            elif length is not None and length.isdigit() and int(length) > limit:
                refusal = self._size_refusal(control, limit)
            elif chunked is not None:
                # No length said up front: counted as it arrives, never read past the cap.
                # (Without either header an HTTP/1.1 request has no body.)
                await self._counted(scope, receive, send, limit, control)
                return
        if refusal is None:
            await self.app(scope, receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            if not control:
                refusal = _in_shape(refusal, scope["path"])
            await refusal(scope, receive, send)

    def _origin_refusal(
        self, origin: bytes, host: bytes | None, control: bool
    ) -> JSONResponse | None:
        text = origin.decode("latin-1").strip().rstrip("/").lower()
        if _same_origin(text, host):
            return None
        if control:
            return problem_response(
                403,
                "Forbidden origin",
                f"The Roundhouse control API does not answer web pages (this request came from "
                f"a page at {text}). Use the Roundhouse app or the `roundhouse` command.",
            )
        allowed = self.origins()
        if "*" in allowed or text in allowed:
            return None
        return _openai_refusal(
            403,
            f"Requests from web pages at {text} are refused. A browser app may use this "
            "gateway only if its origin is listed in the gateway.cors_origins setting: "
            f"`roundhouse settings set gateway.cors_origins {text}`, or the Settings page, "
            "Gateway section.",
            "origin_not_allowed",
        )

    def _site_refusal(self, control: bool) -> JSONResponse:
        message = (
            "Requests that a web page on another site makes are refused. A browser app must "
            "send CORS requests from an origin listed in the gateway.cors_origins setting."
        )
        if control:
            return problem_response(403, "Forbidden origin", message)
        return _openai_refusal(403, message, "origin_not_allowed")

    def _media_refusal(self, content_type: bytes | None) -> JSONResponse:
        sent = content_type.decode("latin-1") if content_type is not None else "none"
        return _openai_refusal(
            415,
            f"The gateway accepts only JSON: send the body with 'Content-Type: "
            f"application/json' (this request's Content-Type: {sent}). OpenAI, Anthropic and "
            "Ollama clients do so already.",
            "unsupported_media_type",
        )

    def _size_refusal(self, control: bool, limit: int) -> JSONResponse:
        if control:
            return problem_response(
                413,
                "Request too large",
                f"The request body is larger than the control API accepts ({limit // MIB} MiB).",
            )
        return _openai_refusal(
            413,
            f"The request body is larger than the gateway accepts ({limit // MIB} MiB). Send "
            "smaller or fewer images, or fewer inputs per request.",
            "request_too_large",
        )

    async def _counted(
        self, scope: Scope, receive: Receive, send: Send, limit: int, control: bool
    ) -> None:
        seen = 0
        over = False
        started = False

        async def counting_receive() -> Message:
            nonlocal seen, over
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    over = True
                    raise BodyTooLarge
            return message

        async def send_unless_over(message: Message) -> None:
            nonlocal started
            if over:
                return  # whatever the route made of the cut body: the 413 goes out instead
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, send_unless_over)
        except Exception:
            # A route that read the body raises what it makes of BodyTooLarge (FastAPI turns
            # it into a 400 "error parsing the body"); any other error is not ours.
            if not over:
                raise
        if over and not started:
            refusal = self._size_refusal(control, limit)
            if not control:
                refusal = _in_shape(refusal, scope["path"])
            await refusal(scope, receive, send)
