"""Hugging Face calls of the daemon client (mixed into DaemonClient): search, model pages, token."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, SecretStr

from roundhouse.api.hub import (
    HubModelDetails,
    HubSearchRequest,
    HubSearchResult,
    HubTokenRequest,
    HubTokenStatus,
)

M = TypeVar("M", bound=BaseModel)
_JSON = {"Content-Type": "application/json"}
# The daemon asks the Hub, which may be slow: more than the control API's usual wait.
_HUB_TIMEOUT = httpx.Timeout(60.0, connect=2.0)


class HubMixin:
    """`/api/v1/hub`: what the daemon asks Hugging Face on the user's behalf."""

    if TYPE_CHECKING:
        # Provided by DaemonClient.
        async def _request(self, method: str, path: str, model: type[M], **kwargs: Any) -> M: ...

    async def hub_search(self, request: HubSearchRequest) -> HubSearchResult:
        body = request.model_dump_json()
        return await self._request(
            "POST",
            "/hub/search",
            HubSearchResult,
            content=body,
            headers=_JSON,
            timeout=_HUB_TIMEOUT,
        )

    async def hub_model(self, repo: str, revision: str = "main") -> HubModelDetails:
        path = "/hub/models/" + quote(repo.strip(), safe="/")
        return await self._request(
            "GET", path, HubModelDetails, params={"revision": revision}, timeout=_HUB_TIMEOUT
        )

    async def hub_token_status(self, check: bool = False) -> HubTokenStatus:
        params = {"check": "true" if check else "false"}
        return await self._request(
            "GET", "/hub/token", HubTokenStatus, params=params, timeout=_HUB_TIMEOUT
        )

    async def set_hub_token(self, token: str) -> HubTokenStatus:
        # Validated by the same schema the daemon uses, then sent as the plain value (pydantic
        # writes a SecretStr as stars).
        request = HubTokenRequest(token=SecretStr(token))
        body = json.dumps({"token": request.token.get_secret_value()})
        return await self._request(
            "PUT",
            "/hub/token",
            HubTokenStatus,
            content=body,
            headers=_JSON,
            timeout=_HUB_TIMEOUT,
        )

    async def clear_hub_token(self) -> HubTokenStatus:
        return await self._request("DELETE", "/hub/token", HubTokenStatus)
