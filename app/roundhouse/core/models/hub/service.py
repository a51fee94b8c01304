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
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar
from urllib.parse import urlsplit

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
from roundhouse.core.models.hub.errors import (
    HubTokenError,
    HubUnavailableError,
    unreachable_error,
)
from roundhouse.core.models.hub.search import search_models
from roundhouse.core.models.hub.token import (
    HubTokenStore,
    ResolvedToken,
    check_token_text,
    token_status,
)

_MAX_REVISION_CHARS = 256
_THREADS = 4
# The look before each call: whether the Hub's address (or the proxy's) takes a connection.
# A slower answer proves nothing, so it is given this long and then left to the call.
PROBE_TIMEOUT_S = 5.0
# A connection made is trusted this long: the next calls do not look again.
PROBE_KEEP_S = 10.0
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
        self._reachable_until = 0.0

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
        except HubUnavailableError as exc:  # no connection, or the deadline passed: unchecked
            unchecked = token_status(self._api, found, False, problem)
            said = unchecked.message
            if found is not None:
                said = f"{said.removesuffix('.')}, but it could not be checked."
            return unchecked.model_copy(update={"message": f"{said} {exc.detail}"})

    def close(self) -> None:
        """Stop taking calls; one still waiting on the Hub ends on its own."""
        self._threads.shutdown(wait=False, cancel_futures=True)

    async def _call(self, fn: Callable[..., T], *args: object) -> T:
        """Run `fn` on the service's threads, bounded by the deadline. A connection that
        cannot be made at all (no network, no name lookup, refused) is known in
        milliseconds, while huggingface_hub would retry it for half a minute: a look at the
        address first says so at once, and starts no call that would go on retrying."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.timeout_s):
                await self._reachable()
                return await loop.run_in_executor(self._threads, fn, *args)
        except TimeoutError:
            raise HubUnavailableError(
                f"Hugging Face did not answer within {self.timeout_s:g} s: check the network "
                "connection (and a proxy or HF_ENDPOINT, if set), then try again."
            ) from None

    async def _reachable(self) -> None:
        """Raise HubUnreachableError when the Hub's address takes no connection; return when
        it does, or when the answer is merely slow (the call's deadline decides then)."""
        if time.monotonic() < self._reachable_until:
            return
        site = self._api.endpoint
        host, port = probe_address(site)
        try:
            async with asyncio.timeout(PROBE_TIMEOUT_S):
                _, writer = await asyncio.open_connection(host, port)
        except TimeoutError:
            return
        except OSError as exc:
            unreachable = unreachable_error(exc, site)
            if unreachable is not None:
                raise unreachable from exc
            return
        writer.close()
        self._reachable_until = time.monotonic() + PROBE_KEEP_S


def probe_address(site: str) -> tuple[str, int]:
    """Where a connection to `site` goes first: its proxy when one applies, else itself."""
    parts = urlsplit(site)
    host = parts.hostname or "huggingface.co"
    default = 443 if parts.scheme == "https" else 80
    proxy = urllib.request.getproxies().get(parts.scheme or "https")
    if proxy and not urllib.request.proxy_bypass(host):
        through = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if through.hostname:
            return through.hostname, through.port or 80
    return host, parts.port or default
