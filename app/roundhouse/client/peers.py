"""The paired machines' calls of the daemon client (mixed into DaemonClient)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import httpx
from pydantic import BaseModel

from roundhouse.api.instances import InstanceInfo
from roundhouse.api.metrics import MetricsHistory
from roundhouse.api.peers import (
    DiscoveredList,
    PairingCodeReply,
    PairWith,
    PeerInfo,
    PeerList,
    PeerMove,
    PeerStart,
    PeerState,
    PeerStopped,
    PeersView,
    Unpaired,
)

M = TypeVar("M", bound=BaseModel)
_JSON = {"Content-Type": "application/json"}
# Starting a model on a peer answers when it is loaded there.
_START_TIMEOUT = httpx.Timeout(1800.0, connect=5.0)
# Pairing waits on the other machine (a TLS handshake, a scrypt on each side).
_PAIR_TIMEOUT = httpx.Timeout(60.0, connect=5.0)


class PeersMixin:
    """`/api/v1/peers`: pair, list, unpair, and a peer's state, start and stop."""

    if TYPE_CHECKING:
        # Provided by DaemonClient.
        async def _request(self, method: str, path: str, model: type[M], **kwargs: Any) -> M: ...

    async def peers(self, check: bool = True) -> PeerList:
        """The paired machines (asked whether each answers, unless `check` is off)."""
        params = {"check": "true" if check else "false"}
        return await self._request("GET", "/peers", PeerList, params=params, timeout=_PAIR_TIMEOUT)

    async def machines(self) -> PeersView:
        """The paired machines as last seen through their change feeds (nothing asked now)."""
        return await self._request("GET", "/peers/machines", PeersView)

    async def discover_peers(self) -> DiscoveredList:
        return await self._request("GET", "/peers/discover", DiscoveredList, timeout=_PAIR_TIMEOUT)

    async def open_pairing_code(self) -> PairingCodeReply:
        return await self._request("POST", "/peers/code", PairingCodeReply)

    async def pair(self, host: str, port: int, code: str) -> PeerInfo:
        body = PairWith(host=host, port=port, code=code).model_dump_json()
        return await self._request(
            "POST", "/peers", PeerInfo, content=body, headers=_JSON, timeout=_PAIR_TIMEOUT
        )

    async def move_peer(self, peer: str, host: str, port: int) -> PeerInfo:
        body = PeerMove(host=host, port=port).model_dump_json()
        return await self._request(
            "PATCH", f"/peers/{peer}", PeerInfo, content=body, headers=_JSON, timeout=_PAIR_TIMEOUT
        )

    async def unpair(self, peer: str) -> Unpaired:
        return await self._request("DELETE", f"/peers/{peer}", Unpaired, timeout=_PAIR_TIMEOUT)

    async def peer_state(self, peer: str) -> PeerState:
        return await self._request("GET", f"/peers/{peer}/state", PeerState, timeout=_PAIR_TIMEOUT)

    async def peer_start(self, peer: str, model: str) -> InstanceInfo:
        body = PeerStart(model=model).model_dump_json()
        return await self._request(
            "POST",
            f"/peers/{peer}/instances",
            InstanceInfo,
            content=body,
            headers=_JSON,
            timeout=_START_TIMEOUT,
        )

    async def peer_stop(self, peer: str, instance: str) -> PeerStopped:
        return await self._request(
            "DELETE", f"/peers/{peer}/instances/{instance}", PeerStopped, timeout=_START_TIMEOUT
        )

    async def peer_metrics(self, peer: str, instance: str, window_s: float) -> MetricsHistory:
        """One of `peer`'s instances' figures over the last `window_s` seconds."""
        return await self._request(
            "GET",
            f"/peers/{peer}/metrics/{instance}",
            MetricsHistory,
            params={"window": window_s},
            timeout=_PAIR_TIMEOUT,
        )
