"""The OpenAI-compatible gateway at /v1: one address for every model running instances serve."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable, Coroutine
from contextlib import aclosing, asynccontextmanager
from typing import Any, TypeVar
from urllib.parse import quote

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from roundhouse.api.engines import EngineId
from roundhouse.api.instances import InstanceInfo
from roundhouse.core.chat.turns import GatewayAnswer
from roundhouse.core.gateway.errors import BadRequest, GatewayError
from roundhouse.core.gateway.failover import RETRY_STATUSES, FailedBeforeReply, is_retryable
from roundhouse.core.gateway.fields import (
    CHAT,
    COMPLETIONS,
    DROPPED_HEADER,
    EMBEDDINGS,
    RERANK,
    SCORE,
    dropped_header,
)
from roundhouse.core.gateway.gateway import EXTERNALS_MAX_AGE_ON_LIST_S, Gateway
from roundhouse.core.gateway.openai_surface import OpenAISurface, openai_error_body
from roundhouse.core.gateway.router import Route
from roundhouse.core.gateway.scheduler import Lease
from roundhouse.core.gateway.sse import payloads, relay
from roundhouse.core.gateway.surface import PATH_HEADER, Plan, Prepared, Surface
from roundhouse.core.gateway.upstream import UPSTREAM_ERRORS, UpstreamReply
from roundhouse.server.deps import Services
from roundhouse.server.services import DaemonServices

GATEWAY_PREFIX = "/v1"
# The status a request whose client left before its reply gets (nginx's "client closed
# request"): nobody reads it, but the access log says what happened.
CLIENT_GONE = 499
_T = TypeVar("_T")
# Where the engine's stream can carry usage, Roundhouse asks for it to count tokens.
_USAGE_PATHS = frozenset({CHAT, COMPLETIONS})
_CHAT = OpenAISurface(CHAT)
_COMPLETIONS = OpenAISurface(COMPLETIONS)
_EMBEDDINGS = OpenAISurface(EMBEDDINGS)
_RERANK = OpenAISurface(RERANK)
_SCORE = OpenAISurface(SCORE)
# Kept as they are in x-roundhouse-model: what model names are made of (tags, repo ids).
_NAME_SAFE = "/:@+-._~!$&'()*,;="

router = APIRouter(prefix=GATEWAY_PREFIX, tags=["gateway"])


async def _gateway_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, GatewayError)
    body = openai_error_body(exc.message, exc.kind, exc.code, exc.param)
    return JSONResponse(body, status_code=exc.status, headers=exc.headers)


def install_gateway(app: FastAPI) -> None:
    """Mount the gateway: no daemon token (OpenAI clients do not have it), loopback only
    through the Host guard and the loopback listener."""
    # Imported here: each surface's module builds on this one's proxy.
    from roundhouse.server.routes import gateway_anthropic, gateway_ollama, gateway_responses

    app.include_router(router)
    app.include_router(gateway_anthropic.router)
    app.include_router(gateway_responses.router)
    app.include_router(gateway_ollama.router)
    app.add_exception_handler(GatewayError, _gateway_error)


@router.get("/models")
async def list_models(services: Services) -> dict[str, Any]:
    """Every model running instances serve and every model Roundhouse can start, in
    OpenAI's list shape; `roundhouse` says its state, engine and instance."""
    gateway = services.gateway
    await gateway.refresh_externals(EXTERNALS_MAX_AGE_ON_LIST_S)
    data = []
    for listed in gateway.listed():
        model, info = listed.model, listed.instance
        data.append(
            {
                "id": model.id,
                "object": "model",
                "created": int(info.started_at) if info else 0,
                "owned_by": model.engine.value,
                "roundhouse": {
                    "state": model.state.value,
                    "engine": model.engine.value,
                    "instance": model.instance,
                    "preset": model.preset,
                    "model": model.model,
                    "origin": info.origin.value if info else None,
                    "name": info.name if info else None,
                    "launch": model.launch,
                    "alias_of": model.alias_of,
                },
            }
        )
    return {"object": "list", "data": data}


@router.post("/chat/completions")
async def chat_completions(request: Request, services: Services) -> Response:
    return await proxy(request, services, _CHAT)


@router.post("/completions")
async def completions(request: Request, services: Services) -> Response:
    return await proxy(request, services, _COMPLETIONS)


@router.post("/embeddings")
async def embeddings(request: Request, services: Services) -> Response:
    return await proxy(request, services, _EMBEDDINGS)


@router.post("/rerank")
async def rerank(request: Request, services: Services) -> Response:
    """To the instance serving the model, started with reranking (llama-server --reranking;
    vLLM and SGLang serve it for reranker models), whose own error says when it was not."""
    return await proxy(request, services, _RERANK)


@router.post("/score")
async def score(request: Request, services: Services) -> Response:
    """vLLM's and SGLang's scoring of text pairs; llama-server has none (it answers 404)."""
    return await proxy(request, services, _SCORE)


def parse_json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise BadRequest(f"The request body is not JSON: {exc}.") from exc
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    return body


def identity(info: InstanceInfo) -> dict[str, str]:
    """Which instance and engine answered: on every proxied reply, streamed or not."""
    return {"x-roundhouse-instance": info.id, "x-roundhouse-engine": info.engine.value}


async def proxy(request: Request, services: DaemonServices, surface: Surface) -> Response:
    """Serve one request of `surface`'s API: routed, queued, budgeted and cancelled like
    every other, answered in that API's shape, its errors included."""
    try:
        gateway = services.gateway
        raw = await request.body()
        # Before anything starts or queues: a refused request changes nothing.
        prepared = surface.prepare(parse_json_object(raw), services.settings.gateway.media_domains)
        began = gateway.live.clock()
        reply = await _unless_gone(
            request.receive, _admit_and_forward(gateway, surface, prepared, raw, began)
        )
        return reply if reply is not None else Response(status_code=CLIENT_GONE)
    except GatewayError as exc:
        if isinstance(surface, OpenAISurface):
            raise  # the app's handler answers in OpenAI's shape
        return JSONResponse(surface.error(exc), status_code=exc.status, headers=exc.headers)


@asynccontextmanager
async def chat_reply(
    services: DaemonServices, body: dict[str, Any]
) -> AsyncIterator[GatewayAnswer]:
    """One chat completion served in this process as `/v1/chat/completions` serves it
    (routed, queued, budgeted, metered and counted): the daemon's own chat turns. Leaving
    the block closes the engine's reply and gives the slot back."""
    raw = json.dumps(body).encode()
    gateway = services.gateway
    refused: GatewayAnswer | None = None
    try:
        prepared = _CHAT.prepare(dict(body), services.settings.gateway.media_domains)
        reply = await _admit_and_forward(gateway, _CHAT, prepared, raw, gateway.live.clock())
    except GatewayError as exc:
        error = openai_error_body(exc.message, exc.kind, exc.code, exc.param)
        refused = GatewayAnswer(exc.status, {}, body=json.dumps(error).encode())
    if refused is not None:
        yield refused
        return
    if not isinstance(reply, _LeasedStream):
        yield GatewayAnswer(reply.status_code, dict(reply.headers), body=bytes(reply.body))
        return
    events = _payloads(reply.body_iterator)
    try:
        async with aclosing(events):
            yield GatewayAnswer(reply.status_code, dict(reply.headers), payloads=events)
    finally:
        reply.end()


async def _payloads(events: AsyncIterable[str | bytes | memoryview]) -> AsyncGenerator[str, None]:
    """The `data:` payload of each event the relay yields (whole events)."""
    async for chunk in events:
        raw = chunk.encode() if isinstance(chunk, str) else bytes(chunk)
        for data in payloads(raw):
            yield data.decode(errors="replace")


async def _admit_and_forward(
    gateway: Gateway, surface: Surface, prepared: Prepared, raw: bytes, began: float
) -> Response:
    # Instances the request failed on before any reply reached the client (or whose
    # context it does not fit): it goes to another, or fails with the first error.
    tried: set[str] = set()
    first: GatewayError | None = None
    while True:
        try:
            target, lease = await gateway.acquire(prepared.model, frozenset(tried))
        except GatewayError as exc:
            if first is not None:
                raise first from exc  # what went wrong says more than "none other is up"
            raise
        try:
            return await _forward(gateway, surface, target, lease, prepared, raw, began, tried)
        except BaseException as exc:
            lease.release()
            if not is_retryable(exc):
                raise
            assert isinstance(exc, GatewayError)
            tried.add(target.instance.id)
            first = first or exc
            if not gateway.elsewhere(prepared.model, tried):
                # No other instance takes it now: said at once, nothing waits or starts.
                if first is exc:
                    raise
                raise first from exc


async def _unless_gone(receive: Receive, work: Coroutine[Any, Any, _T]) -> _T | None:
    """`work`'s result, or None when the client leaves first: then `work` is cancelled where
    it waits (its place in the queue, a just-in-time load, the engine's reply, a stream's
    next event), which gives its slot back and closes the engine's connection, so that the
    engine stops generating for nobody.

    `work` runs in this task, so nothing waits on a second task to start; only the watch is
    a task of its own, and it cancels this one if the client goes first."""
    request_task = asyncio.current_task()
    assert request_task is not None
    state = {"working": True, "gone": False}

    async def watch() -> None:
        try:
            await _disconnected(receive)
        except Exception:  # noqa: BLE001 - the server's receive may fail in its own ways
            return  # a receive that failed says nothing of the client: the work goes on
        # No await between the check and the cancel: work that has ended is never cancelled.
        if state["working"]:
            state["gone"] = True
            request_task.cancel()

    watcher = asyncio.create_task(watch())
    try:
        return await work
    except asyncio.CancelledError:
        # Only the watch's own cancel is answered here; the server's goes on up.
        if state["gone"] and request_task.uncancel() == 0:
            return None
        raise
    finally:
        state["working"] = False
        watcher.cancel()


async def _disconnected(receive: Receive) -> None:
    """Returns when the client has gone. The body is read already: nothing else comes."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def _forward(
    gateway: Gateway,
    surface: Surface,
    target: Route,
    lease: Lease,
    prepared: Prepared,
    raw: bytes,
    began: float,
    tried: set[str] | None = None,
) -> Response:
    """Send the request on and answer with the reply; a streamed reply holds `lease` until
    it ends, any other releases it here. A 502 or 503 from the engine, before any of its body,
    raises FailedBeforeReply where another instance may take the request (not one `tried`)."""
    info = target.instance
    # Before the model name is rewritten or anything is sent: counted as the client wrote it.
    if prepared.budget is not None:
        budget_path, budget_body = prepared.budget
        await gateway.budget.check(info, target.upstream_model, budget_path, budget_body, len(raw))
    native = gateway.native.path(info, surface.name) if gateway.pass_through() else None
    plan = surface.plan(prepared, info, native)
    upstream = await _send(gateway, target, plan, prepared, raw)
    if native is not None and plan.taken == "passthrough" and upstream.status_code == 404:
        # A build older than the catalog says: translated, now and from now on.
        upstream.close()
        gateway.native.missing(info, surface.name)
        plan = surface.plan(prepared, info, None)
        upstream = await _send(gateway, target, plan, prepared, raw)
    if upstream.status_code in RETRY_STATUSES and gateway.elsewhere(
        prepared.model, {*(tried or ()), info.id}
    ):
        upstream.close()
        raise FailedBeforeReply(
            f"The instance {info.id} answered {upstream.status_code}.", instance_id=info.id
        )
    forward_usage = plan.forward_usage
    instance_id = info.id
    api = f"{surface.name}/{plan.taken}"
    # Ollama's /v1 replies carry no timings: its generation rate comes from the stream.
    meter = gateway.live.begin(
        instance_id, began, derive_engine_rate=info.engine == EngineId.OLLAMA
    )
    headers = identity(info)
    headers[PATH_HEADER] = plan.taken
    # The model that served it; when an alias or the default model stood in, which.
    # Percent-encoded beyond ASCII: a header is Latin-1, a file's name may be anything.
    headers["x-roundhouse-model"] = quote(target.model or target.upstream_model, safe=_NAME_SAFE)
    if target.via:
        headers["x-roundhouse-model-via"] = target.via
    if prepared.dropped:
        headers[DROPPED_HEADER] = dropped_header(prepared.dropped)
    # Relayed as the engine wrote it (the gateway asks for no compression, but an engine may
    # compress anyway): the client decodes what the engine encoded. A converter reads the
    # bytes, so the engine's encoding is kept only where nothing converts them.
    encoding = upstream.headers.get("content-encoding")
    if encoding and plan.reply is None and plan.events is None:
        headers["content-encoding"] = encoding
    is_sse = upstream.headers.get("content-type", "").startswith("text/event-stream")
    if not (prepared.stream and upstream.status_code == 200 and is_sse):
        try:
            reply = await upstream.aread()
        except UPSTREAM_ERRORS as exc:
            why = f"{exc or exc.__class__.__name__}"
            gateway.failed(info, f"it broke off its reply: {why}")
            # Not a byte of it reached the client: another instance may answer it.
            raise FailedBeforeReply(
                f"The instance {instance_id} broke off its reply: {why}.", instance_id
            ) from exc
        finally:
            upstream.close()
            lease.release()
        if upstream.status_code == 400 and prepared.budget is not None:
            # A request the budget could not check, refused by the engine over its context:
            # said with the numbers and the setting, like one the budget refuses.
            budget_path, budget_body = prepared.budget
            refused = await gateway.budget.engine_refusal(
                info, target.upstream_model, budget_path, budget_body, len(raw), reply
            )
            if refused is not None:
                meter.finish(None)
                raise refused
        usage, timings = _usage_in(reply) if upstream.is_success else (None, None)
        gateway.usage.record(instance_id, usage, api)
        meter.timings(timings)
        meter.finish(usage)
        media_type = upstream.headers.get("content-type", "application/json")
        if plan.reply is not None:
            reply = plan.reply(upstream.status_code, reply)
            media_type = "application/json"
        return Response(
            reply, status_code=upstream.status_code, media_type=media_type, headers=headers
        )

    def on_usage(usage: Any) -> None:
        gateway.usage.record(instance_id, usage, api)
        meter.finish(usage)

    def on_broken(why: str) -> None:
        gateway.failed(info, f"its stream broke off: {why}")

    events = _relay(
        upstream, forward_usage, on_usage, meter.chunk, meter.timings, (info, on_broken)
    )
    if plan.events is not None:
        events = plan.events(events)
    return _LeasedStream(
        events,
        upstream=upstream,
        lease=lease,
        media_type=plan.media_type or upstream.headers["content-type"],
        headers={"cache-control": "no-cache", "x-accel-buffering": "no", **headers},
    )


async def _send(
    gateway: Gateway, target: Route, plan: Plan, prepared: Prepared, raw: bytes
) -> UpstreamReply:
    """Open the engine's reply to `plan`: the client's own bytes unless something changed."""
    body = plan.body
    changed = plan.changed
    if body.get("model") != target.upstream_model:
        body["model"] = target.upstream_model
        changed = True
    plan.forward_usage = True
    if prepared.stream and plan.path in _USAGE_PATHS:
        options = body.get("stream_options")
        options = options if isinstance(options, dict) else {}
        if not options.get("include_usage"):
            # A converter reads the counts and says them its own way: it gets the chunk.
            plan.forward_usage = plan.needs_usage
            body["stream_options"] = {**options, "include_usage": True}
            changed = True
    # What the client sent goes out byte for byte unless Roundhouse had to change it.
    content = json.dumps(body).encode() if changed else raw
    return await gateway.open(target, plan.path, content, stream=prepared.stream)


class _LeasedStream(StreamingResponse):
    """A streamed reply that gives its slot back and closes the engine's reply however it
    ends: finished, broken, or a client gone before the first byte (when the relay below
    never starts, so its own clean-up never runs). It watches for the client going as the
    request did before it (`_unless_gone`): Starlette's own watch, for servers of ASGI 2.3
    such as uvicorn, starts a task group of two new tasks, so that the first event waits a
    turn of the loop and their start."""

    def __init__(
        self,
        content: AsyncIterator[bytes],
        *,
        upstream: UpstreamReply,
        lease: Lease,
        media_type: str,
        headers: dict[str, str],
    ) -> None:
        super().__init__(content, media_type=media_type, headers=headers)
        self._upstream = upstream
        self._lease = lease

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await _unless_gone(receive, self.stream_response(send))
        finally:
            self.end()

    def end(self) -> None:
        """Give the slot back and close the engine's reply."""
        self._lease.release()
        self._upstream.close()


async def _relay(
    upstream: UpstreamReply,
    forward_usage: bool,
    on_usage: Callable[[Any], None],
    on_events: Callable[[int], None],
    on_timings: Callable[[Any], None],
    broken: tuple[InstanceInfo, Callable[[str], None]] | None = None,
) -> AsyncIterator[bytes]:
    # Closing the engine's response on every exit, a client that went away included (the
    # server cancels this generator), stops the engine generating for nobody.
    try:
        async for event in relay(
            upstream.aiter_raw(),
            forward_usage=forward_usage,
            on_usage=on_usage,
            on_events=on_events,
            on_timings=on_timings,
        ):
            yield event
    except UPSTREAM_ERRORS as exc:
        # Headers are sent already: the error goes in the stream, as OpenAI's does. It names
        # the instance, whose circuit counts the failure: a retry goes to another one.
        why = str(exc) or exc.__class__.__name__
        message = f"The engine broke off the stream: {why}."
        if broken is not None:
            info, on_broken = broken
            on_broken(why)
            message = (
                f"The {info.engine.value} instance {info.id} at {info.base_url} broke off the "
                f"stream ({why}): it stopped or failed mid-reply. Send the request again: "
                "the gateway sends it to another instance serving the model, if one is healthy."
            )
        error = {
            "error": {
                "message": message,
                "type": "server_error",
                "code": "upstream_broken",
            }
        }
        yield b"data: " + json.dumps(error).encode() + b"\n\n"
    finally:
        # Not awaited, so a cancelled scope (the server cancels this on a disconnect) cannot
        # stop the close from reaching the engine.
        upstream.close()


def _usage_in(reply: bytes) -> tuple[Any, Any]:
    """(usage, llama-server's timings) of a whole reply; None for what it lacks."""
    try:
        body = json.loads(reply)
    except ValueError:
        return None, None
    if not isinstance(body, dict):
        return None, None
    return body.get("usage"), body.get("timings")
