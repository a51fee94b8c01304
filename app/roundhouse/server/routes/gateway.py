"""The OpenAI-compatible gateway at /v1: one address for every model running instances serve."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from roundhouse.core.gateway.gateway import Gateway
from roundhouse.core.gateway.router import BadRequest, GatewayError, UpstreamFailed
from roundhouse.core.gateway.sse import relay
from roundhouse.server.deps import Services

GATEWAY_PREFIX = "/v1"
# Where the engine's stream can carry usage, Roundhouse asks for it to count tokens.
_USAGE_PATHS = frozenset({"chat/completions", "completions"})

router = APIRouter(prefix=GATEWAY_PREFIX, tags=["gateway"])


def openai_error(status: int, message: str, kind: str, code: str | None) -> JSONResponse:
    return JSONResponse(
        {"error": {"message": message, "type": kind, "code": code}}, status_code=status
    )


async def _gateway_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, GatewayError)
    return openai_error(exc.status, exc.message, exc.kind, exc.code)


def install_gateway(app: FastAPI) -> None:
    """Mount the gateway: no daemon token (OpenAI clients do not have it), loopback only
    through the Host guard and the loopback listener."""
    app.include_router(router)
    app.add_exception_handler(GatewayError, _gateway_error)


@router.get("/models")
async def list_models(services: Services) -> dict[str, Any]:
    """Every model that ready instances serve, in OpenAI's list shape."""
    data = [
        {
            "id": model,
            "object": "model",
            "created": int(info.started_at),
            "owned_by": info.engine.value,
            "roundhouse": {
                "instance": info.id,
                "engine": info.engine.value,
                "origin": info.origin.value,
                "name": info.name,
            },
        }
        for model, info in services.gateway().models().items()
    ]
    return {"object": "list", "data": data}


@router.post("/chat/completions")
async def chat_completions(request: Request, services: Services) -> Response:
    return await _proxy(request, services.gateway(), "chat/completions")


@router.post("/completions")
async def completions(request: Request, services: Services) -> Response:
    return await _proxy(request, services.gateway(), "completions")


@router.post("/embeddings")
async def embeddings(request: Request, services: Services) -> Response:
    return await _proxy(request, services.gateway(), "embeddings")


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise BadRequest(f"The request body is not JSON: {exc}.") from exc
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    return body


async def _proxy(request: Request, gateway: Gateway, path: str) -> Response:
    raw = await request.body()
    body = _parse(raw)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("The request names no model: set 'model' to one from GET /v1/models.")
    target = gateway.route(model)
    stream = body.get("stream") is True
    changed = False
    if target.upstream_model != model:
        body["model"] = target.upstream_model
        changed = True
    forward_usage = True
    if stream and path in _USAGE_PATHS:
        options = body.get("stream_options")
        options = options if isinstance(options, dict) else {}
        if not options.get("include_usage"):
            forward_usage = False
            body["stream_options"] = {**options, "include_usage": True}
            changed = True
    # What the client sent goes out byte for byte unless Roundhouse had to change it.
    content = json.dumps(body).encode() if changed else raw
    upstream = await gateway.open(target, path, content, stream=stream)
    instance_id = target.instance.id
    is_sse = upstream.headers.get("content-type", "").startswith("text/event-stream")
    if not (stream and upstream.status_code == 200 and is_sse):
        try:
            reply = await upstream.aread()
        except httpx.HTTPError as exc:
            raise UpstreamFailed(
                f"The instance {instance_id} broke off its reply: {exc or exc.__class__.__name__}."
            ) from exc
        finally:
            await upstream.aclose()
        gateway.usage.record(instance_id, _usage_in(reply) if upstream.is_success else None)
        return Response(
            reply,
            status_code=upstream.status_code,
            media_type=upstream.headers.get("content-type", "application/json"),
        )

    def on_usage(usage: Any) -> None:
        gateway.usage.record(instance_id, usage)

    return StreamingResponse(
        _relay(upstream, forward_usage, on_usage),
        media_type=upstream.headers["content-type"],
        headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
    )


async def _relay(
    upstream: httpx.Response, forward_usage: bool, on_usage: Callable[[Any], None]
) -> AsyncIterator[bytes]:
    # Closing the engine's response on every exit, a client that went away included (the
    # server cancels this generator), stops the engine generating for nobody.
    try:
        async for event in relay(
            upstream.aiter_raw(), forward_usage=forward_usage, on_usage=on_usage
        ):
            yield event
    except httpx.HTTPError as exc:
        # Headers are sent already: the error goes in the stream, as OpenAI's does.
        error = {
            "error": {
                "message": f"The engine broke off the stream: {exc or exc.__class__.__name__}.",
                "type": "server_error",
                "code": "upstream_broken",
            }
        }
        yield b"data: " + json.dumps(error).encode() + b"\n\n"
    finally:
        # The server cancels this on a disconnect, and under anyio every await in a cancelled
        # scope is cancelled too: shielded, the close does reach the engine.
        with anyio.CancelScope(shield=True):
            await upstream.aclose()


def _usage_in(reply: bytes) -> Any:
    try:
        body = json.loads(reply)
    except ValueError:
        return None
    return body.get("usage") if isinstance(body, dict) else None
