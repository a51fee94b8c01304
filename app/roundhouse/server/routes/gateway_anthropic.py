"""Anthropic's Messages API on the gateway: `/v1/messages` and `/v1/messages/count_tokens`,
routed, queued, budgeted and guarded like every other gateway request."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from roundhouse.core.gateway.anthropic.surface import AnthropicSurface, CountTokensSurface
from roundhouse.server.deps import Services
from roundhouse.server.routes.gateway import GATEWAY_PREFIX, proxy

_MESSAGES = AnthropicSurface()
_COUNT = CountTokensSurface()

router = APIRouter(prefix=GATEWAY_PREFIX, tags=["gateway"])


@router.post("/messages")
async def messages(request: Request, services: Services) -> Response:
    return await proxy(request, services, _MESSAGES)


@router.post("/messages/count_tokens")
async def count_tokens(request: Request, services: Services) -> Response:
    return await proxy(request, services, _COUNT)
