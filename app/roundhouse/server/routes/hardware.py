"""Routes of the hardware inventory and the live samples."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter
from fastapi.sse import EventSourceResponse, ServerSentEvent

from roundhouse.api.hardware import HardwareInventory, SampleHistory
from roundhouse.server.deps import Services
from roundhouse.server.streams import event, until_stopped

router = APIRouter(prefix="/hardware", tags=["hardware"])


@router.get("", response_model=HardwareInventory)
async def get_inventory(services: Services, refresh: bool = False) -> HardwareInventory:
    return await services.inventory(refresh=refresh)


@router.get("/samples", response_model=SampleHistory)
async def get_samples(services: Services, since: float | None = None) -> SampleHistory:
    return services.sampler.history(since)


@router.get("/samples/stream", response_class=EventSourceResponse)
async def stream_samples(services: Services) -> AsyncIterator[ServerSentEvent]:
    """Each new sample as an `sample` event, starting with the latest one."""
    latest = services.sampler.latest()
    if latest is not None:
        yield event("sample", latest)
    async for sample in until_stopped(services.sampler.subscribe(), services.stopping):
        yield event("sample", sample)
