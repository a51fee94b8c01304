"""Routes of the update check: the last result, and a check now (the user asked)."""

from __future__ import annotations

from fastapi import APIRouter

from roundhouse.api.updates import UpdateStatus
from roundhouse.server.deps import Services

router = APIRouter(prefix="/updates", tags=["updates"])


@router.get("", response_model=UpdateStatus)
async def update_status(services: Services) -> UpdateStatus:
    """The last check's result; asks nothing of the network."""
    return services.update_checker().status()


@router.post("/check", response_model=UpdateStatus)
async def check_updates(services: Services) -> UpdateStatus:
    """Ask PyPI now, even with `ui.check_updates` off: the user asked. A failure is in
    `error`, with the last known release kept."""
    return await services.update_checker().check()
