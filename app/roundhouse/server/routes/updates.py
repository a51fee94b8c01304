"""Routes of the update check: the last result, and a check now (the user asked)."""

from __future__ import annotations

from fastapi import APIRouter

from roundhouse.api.updates import UpdateStatus
from roundhouse.server.deps import Updates

router = APIRouter(prefix="/updates", tags=["updates"])


@router.get("", response_model=UpdateStatus)
async def update_status(updates: Updates) -> UpdateStatus:
    """The last check's result; asks nothing of the network."""
    return updates.status()


@router.post("/check", response_model=UpdateStatus)
async def check_updates(updates: Updates) -> UpdateStatus:
    """Ask PyPI now, even with `ui.check_updates` off: the user asked. A failure is in
    `error`, with the last known release kept."""
    return await updates.check()
