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
from roundhouse.server.deps import ModelsOpen, Services

router = APIRouter(prefix="/hub", tags=["hub"], dependencies=[ModelsOpen])


@router.post("/search", response_model=HubSearchResult)
async def search(request: HubSearchRequest, services: Services) -> HubSearchResult:
    """Models on the Hub that local engines can run, by text, kind and sort order."""
    return await services.hub_service().search(request)


@router.get("/models/{repo:path}", response_model=HubModelDetails)
async def details(
    repo: str,
    services: Services,
    revision: str = Query(default="main", max_length=256, description="branch, tag or commit"),
) -> HubModelDetails:
    """A model's page: the card's summary, license, gated flag and its files by quantization."""
    return await services.hub_service().details(repo, revision)


@router.get("/token", response_model=HubTokenStatus)
async def token_status(
    services: Services,
    check: bool = Query(default=False, description="ask the Hub whether it accepts the token"),
) -> HubTokenStatus:
    """Whether a Hugging Face token is in use (never the token itself)."""
    return await services.hub_service().token_status(check=check)


@router.put("/token", response_model=HubTokenStatus)
async def set_token(request: HubTokenRequest, services: Services) -> HubTokenStatus:
    """Check a token with the Hub and keep it in the OS keyring; it opens gated repos."""
    return await services.hub_service().set_token(request.token.get_secret_value())


@router.delete("/token", response_model=HubTokenStatus)
async def clear_token(services: Services) -> HubTokenStatus:
    """Forget the stored token."""
    return await services.hub_service().clear_token()
