"""OpenAI's Responses API on the gateway: `POST /v1/responses`, routed, queued, budgeted and
guarded like every other gateway request."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from roundhouse.core.gateway.responses.store import ResponseStore
from roundhouse.core.gateway.responses.surface import ResponsesSurface
from roundhouse.server.deps import Services
from roundhouse.server.routes.gateway import GATEWAY_PREFIX, proxy

# One store per daemon process: what `previous_response_id` names, kept in memory.
_RESPONSES = ResponsesSurface(ResponseStore())

router = APIRouter(prefix=GATEWAY_PREFIX, tags=["gateway"])


@router.post("/responses")
async def responses(request: Request, services: Services) -> Response:
    return await proxy(request, services, _RESPONSES)
