"""The gateway's state: routing over the instance service, upstream pools, usage counts."""

from __future__ import annotations

import httpx

from roundhouse.api.external import AttachSource
from roundhouse.api.instances import InstanceInfo
from roundhouse.core.gateway.router import Route, UpstreamFailed, listed, route
from roundhouse.core.gateway.upstream import Upstream
from roundhouse.core.gateway.usage import UsageCounter
from roundhouse.core.instances.service import InstanceService


class Gateway:
    """Routes a model name to an instance and opens requests to it. Just-in-time starts,
    idle unloading and a queue belong here too, in front of `route`."""

    def __init__(self, instances: InstanceService, upstream: Upstream | None = None) -> None:
        self.instances = instances
        self.upstream = upstream or Upstream()
        self.usage = UsageCounter()
        # Keys of added endpoints, read from the keyring once rather than per request.
        self._keys: dict[str, str | None] = {}

    def models(self) -> dict[str, InstanceInfo]:
        return listed(self.instances.all(memory=False))

    def route(self, model: str) -> Route:
        return route(self.instances.all(memory=False), model)

    async def _headers(self, info: InstanceInfo, stream: bool) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream" if stream else "application/json",
        }
        if info.found_by == AttachSource.USER_ENDPOINT:
            if info.id not in self._keys:
                self._keys[info.id] = await self.instances.endpoint_key(info.id)
            key = self._keys[info.id]
            if key:
                headers["authorization"] = f"Bearer {key}"
        return headers

    async def open(self, target: Route, path: str, body: bytes, *, stream: bool) -> httpx.Response:
        """Send `body` to the instance's `/v1/<path>`; the caller reads and closes the reply."""
        info = target.instance
        client = self.upstream.client_for(info)
        request = client.build_request(
            "POST",
            f"{info.base_url.rstrip('/')}/{path}",
            content=body,
            headers=await self._headers(info, stream),
        )
        try:
            return await client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise UpstreamFailed(
                f"The {info.engine.value} instance {info.id} at {info.base_url} did not answer: "
                f"{exc.__class__.__name__}: {exc or 'no detail'}."
            ) from exc

    async def aclose(self) -> None:
        await self.upstream.aclose()
