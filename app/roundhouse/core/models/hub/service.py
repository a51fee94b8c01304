"""The Hub as the daemon uses it: async methods over huggingface_hub's blocking client.

    hub = HubService(endpoint=None)            # None: HF_ENDPOINT, else huggingface.co
    found = await hub.search(HubSearchRequest(query="qwen3", kinds=["gguf"]))
    page = await hub.details("Qwen/Qwen3-0.6B-GGUF")            # files grouped by quant
    status = await hub.set_token("hf_...")      # checked with the Hub, then kept in the keyring
    token = await hub.token()                    # for downloads; None when there is none

Errors: NotFoundError (no such repo or revision), GatedModelError (accept the license and
add a token), HubTokenError (the Hub refused the token), HubUnavailableError (network,
offline mode, a Hub error), InvalidInputError (a malformed id or token), SecretStoreError
(no usable keyring).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from huggingface_hub import HfApi

from roundhouse import __version__
from roundhouse.api.hub import (
    HubModelDetails,
    HubSearchRequest,
    HubSearchResult,
    HubTokenSource,
    HubTokenStatus,
)
from roundhouse.core.errors import InvalidInputError
from roundhouse.core.models.hub.details import model_details
from roundhouse.core.models.hub.errors import HubTokenError, HubUnavailableError
from roundhouse.core.models.hub.search import search_models
from roundhouse.core.models.hub.token import (
    HubTokenStore,
    ResolvedToken,
    check_token_text,
    token_status,
)

_MAX_REVISION_CHARS = 256
_THREADS = 4
T = TypeVar("T")


class HubService:
    def __init__(
        self,
        endpoint: str | None = None,
        tokens: HubTokenStore | None = None,
        timeout_s: float = 15.0,
    ) -> None:
        """`timeout_s` bounds each call: huggingface_hub retries a listing for about 25 s
        when the network is down, and a user waits for no such thing. The calls run on the
        service's own threads, so a Hub that hangs never starves the daemon's other work."""
        self.endpoint = endpoint.rstrip("/") if endpoint else None
        self.tokens = tokens or HubTokenStore()
        self.timeout_s = timeout_s
        self._threads = ThreadPoolExecutor(_THREADS, thread_name_prefix="hub")
        self._api = HfApi(
            endpoint=self.endpoint, library_name="roundhouse", library_version=__version__
        )

    async def token(self) -> str | None:
        """The token Hub calls use (keyring first, then HF_TOKEN or `hf auth login`)."""
        return await asyncio.to_thread(self.tokens.token)

    async def search(self, request: HubSearchRequest) -> HubSearchResult:
        token = await self.token()
        return await self._call(search_models, self._api, request, token)

    async def details(self, repo: str, revision: str = "main") -> HubModelDetails:
        repo, revision = repo.strip(), (revision or "main").strip()
        if not repo:
            raise InvalidInputError("Name the model: owner/name, e.g. Qwen/Qwen3-0.6B-GGUF.")
        if not revision or len(revision) > _MAX_REVISION_CHARS:
            raise InvalidInputError("Give a branch, tag or commit, e.g. main.")
        token = await self.token()
        return await self._call(model_details, self._api, repo, revision, token, self.endpoint)

    async def token_status(self, check: bool = True) -> HubTokenStatus:
        """Whether a token is set and, when `check`, whether the Hub accepts it."""
        found = await asyncio.to_thread(self.tokens.resolve)
        return await self._status(found, check, self.tokens.keyring_problem)

    async def set_token(self, token: str) -> HubTokenStatus:
        """Check the token with the Hub, then keep it in the keyring. A token the Hub refuses
        is not kept (HubTokenError); one that cannot be checked now (offline) is."""
        found = ResolvedToken(check_token_text(token), HubTokenSource.KEYRING)
        status = await self._status(found, True)
        if status.valid is False:
            raise HubTokenError(status.message)
        await asyncio.to_thread(self.tokens.store, found.value)
        return status

    async def clear_token(self) -> HubTokenStatus:
        """Forget the stored token; HF_TOKEN or an `hf auth login` token may still apply."""
        await asyncio.to_thread(self.tokens.clear)
        return await self.token_status(check=False)

    async def _status(
        self, found: ResolvedToken | None, check: bool, problem: str | None = None
    ) -> HubTokenStatus:
        try:
            return await self._call(token_status, self._api, found, check, problem)
        except HubUnavailableError as exc:  # the deadline passed: say so, unchecked
            unchecked = token_status(self._api, found, False, problem)
            return unchecked.model_copy(update={"message": f"{unchecked.message} {exc.detail}"})

    def close(self) -> None:
        """Stop taking calls; one still waiting on the Hub ends on its own."""
        self._threads.shutdown(wait=False, cancel_futures=True)

    async def _call(self, fn: Callable[..., T], *args: object) -> T:
        running = asyncio.get_running_loop().run_in_executor(self._threads, fn, *args)
        try:
            return await asyncio.wait_for(running, self.timeout_s)
        except TimeoutError:
            raise HubUnavailableError(
                f"Hugging Face did not answer within {self.timeout_s:g} s: check the network "
                "connection (and a proxy or HF_ENDPOINT, if set), then try again."
            ) from None
