"""Routes of the engines: the catalog and what is installed on this machine."""

from __future__ import annotations

from fastapi import APIRouter

from roundhouse.api.engines import EnginesOverview
from roundhouse.server.deps import Services

router = APIRouter(prefix="/engines", tags=["engines"])


@router.get("", response_model=EnginesOverview)
async def get_engines(services: Services, refresh: bool = False) -> EnginesOverview:
    return await services.engines(refresh=refresh)
