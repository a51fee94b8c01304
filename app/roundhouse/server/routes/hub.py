"""Routes of Hugging Face: search, a model's page with its files by quantization, the token."""

from __future__ import annotations

from fastapi import APIRouter, Query

from roundhouse.api.hub import (
    HubModelDetails,
    HubSearchRequest,
    HubSearchResult,
    HubTokenRequest,
    HubTokenStatus,
)
from roundhouse.server.deps import Hub, ModelsOpen

router = APIRouter(prefix="/hub", tags=["hub"], dependencies=[ModelsOpen])


@router.post("/search", response_model=HubSearchResult)
async def search(request: HubSearchRequest, hub: Hub) -> HubSearchResult:
    """Models on the Hub that local engines can run, by text, kind and sort order."""
    return await hub.search(request)


@router.get("/models/{repo:path}", response_model=HubModelDetails)
async def details(
    repo: str,
    hub: Hub,
    revision: str = Query(default="main", max_length=256, description="branch, tag or commit"),
) -> HubModelDetails:
    """A model's page: the card's summary, license, gated flag and its files by quantization."""
    return await hub.details(repo, revision)


@router.get("/token", response_model=HubTokenStatus)
async def token_status(
    hub: Hub,
    check: bool = Query(default=False, description="ask the Hub whether it accepts the token"),
) -> HubTokenStatus:
    """Whether a Hugging Face token is in use (never the token itself)."""
    return await hub.token_status(check=check)


@router.put("/token", response_model=HubTokenStatus)
async def set_token(request: HubTokenRequest, hub: Hub) -> HubTokenStatus:
    """Check a token with the Hub and keep it in the OS keyring; it opens gated repos."""
    return await hub.set_token(request.token.get_secret_value())


@router.delete("/token", response_model=HubTokenStatus)
async def clear_token(hub: Hub) -> HubTokenStatus:
    """Forget the stored token."""
    return await hub.clear_token()
