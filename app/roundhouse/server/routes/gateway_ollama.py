"""Ollama's API on the gateway (`/api/tags`, `/api/chat`, `/api/generate`, `/api/embed`...),
for models any engine serves: routed, queued, budgeted and guarded like every other gateway
request, answered in Ollama's shapes (NDJSON streams, `{"error": "..."}`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from roundhouse.core.gateway.errors import GatewayError, ModelNotFound
from roundhouse.core.gateway.gateway import EXTERNALS_MAX_AGE_ON_LIST_S, Gateway
from roundhouse.core.gateway.listing import Listed
from roundhouse.core.gateway.ollama import models
from roundhouse.core.gateway.ollama.reply import created_at, error_json
from roundhouse.core.gateway.ollama.request import require_model
from roundhouse.core.gateway.ollama.surface import LATEST, OllamaSurface, Route, without_latest
from roundhouse.core.gateway.router import names_of
from roundhouse.server.deps import Services, TheGateway
from roundhouse.server.routes.gateway import GATEWAY_PREFIX, parse_json_object, proxy
from roundhouse.server.services import DaemonServices

# Every path this API answers: the listeners' guards (key, CORS) cover each.
OLLAMA_PATHS = (
    "/api/version",
    "/api/tags",
    "/api/ps",
    "/api/show",
    "/api/chat",
    "/api/generate",
    "/api/embed",
    "/api/embeddings",
)
# What the gateway's guards cover on the daemon's own listener: /v1 and Ollama's paths
# (never /api/v1, the daemon's control API, which needs its token).
GATEWAY_PATHS = (GATEWAY_PREFIX, *OLLAMA_PATHS)

router = APIRouter(tags=["gateway"])
# Only on the Ollama port's own listener: what Ollama answers at its root, which clients
# (Open WebUI among them) ask to see that something is there.
root_router = APIRouter()


def _ollama_error(exc: GatewayError) -> JSONResponse:
    return JSONResponse(error_json(exc.message), status_code=exc.status, headers=exc.headers)


def _known(gateway: Gateway) -> Callable[[str], bool]:
    def known(name: str) -> bool:
        return any(_matches(entry, name) for entry in gateway.listed())

    return known


def _matches(entry: Listed, name: str) -> bool:
    if entry.model.id == name:
        return True
    return (
        entry.instance is not None
        and entry.model.alias_of is None
        and name in names_of(entry.instance)
    )


def _find(listed: list[Listed], name: str) -> Listed | None:
    wanted = [name, name.removesuffix(LATEST)] if name.endswith(LATEST) else [name]
    for candidate in wanted:
        found = next((e for e in listed if _matches(e, candidate)), None)
        if found is not None:
            return found
    return None


async def _listed(gateway: Gateway) -> list[Listed]:
    await gateway.refresh_externals(EXTERNALS_MAX_AGE_ON_LIST_S)
    return gateway.listed()


@root_router.api_route("/", methods=["GET", "HEAD"])
async def root() -> PlainTextResponse:
    return PlainTextResponse("Roundhouse is running (Ollama's API)")


@router.get("/api/version")
async def version(services: Services) -> dict[str, str]:
    # `roundhouse` tells a Roundhouse from an Ollama (the Ollama-port listener asks).
    return {"version": models.OLLAMA_API_VERSION, "roundhouse": services.version}


@router.get("/api/tags")
async def tags(gateway: TheGateway) -> dict[str, Any]:
    """Every model served or startable, aliases included."""
    listed = await _listed(gateway)
    # Reads each model's header (cached): not in the event loop.
    return await asyncio.to_thread(models.tags, listed)


@router.get("/api/ps")
async def ps(gateway: TheGateway) -> dict[str, Any]:
    listed = await _listed(gateway)
    return await asyncio.to_thread(models.ps, listed)


@router.post("/api/show")
async def show(request: Request, gateway: TheGateway) -> Response:
    try:
        name = require_model(parse_json_object(await request.body()))
        found = _find(await _listed(gateway), name)
        if found is None:
            raise ModelNotFound(f"model '{name}' not found")
    except GatewayError as exc:
        return _ollama_error(exc)
    return JSONResponse(await asyncio.to_thread(models.show, found))


async def _serve(request: Request, services: DaemonServices, route: Route) -> Response:
    gateway = services.gateway
    loaded = await _load_only(request, gateway, route)
    if loaded is not None:
        return loaded
    return await proxy(request, services, OllamaSurface(route, _known(gateway)))


async def _load_only(request: Request, gateway: Gateway, route: Route) -> Response | None:
    """Ollama's way to load a model ahead: a chat with no messages, a generate with no
    prompt. The model is started as a request would start it, and nothing is generated."""
    if route not in ("chat", "generate"):
        return None
    try:
        body = parse_json_object(await request.body())
        empty = not body.get("messages") if route == "chat" else not body.get("prompt")
        if not empty or body.get("images"):
            return None
        model = without_latest(require_model(body), _known(gateway))
        _target, lease = await gateway.acquire(model)
        lease.release()
    except GatewayError as exc:
        return _ollama_error(exc)
    out: dict[str, Any] = {"model": model, "created_at": created_at()}
    if route == "chat":
        out["message"] = {"role": "assistant", "content": ""}
    else:
        out["response"] = ""
    out.update(done=True, done_reason="load")
    return JSONResponse(out)


@router.post("/api/chat")
async def chat(request: Request, services: Services) -> Response:
    return await _serve(request, services, "chat")


@router.post("/api/generate")
async def generate(request: Request, services: Services) -> Response:
    return await _serve(request, services, "generate")


@router.post("/api/embed")
async def embed(request: Request, services: Services) -> Response:
    return await _serve(request, services, "embed")


@router.post("/api/embeddings")
async def embeddings(request: Request, services: Services) -> Response:
    return await _serve(request, services, "embeddings")
