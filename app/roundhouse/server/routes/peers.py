"""The control API of paired machines (/api/v1/peers): list, open a pairing code, pair, unpair,
and a peer's state, start and stop, asked of it by this daemon."""

from __future__ import annotations

from fastapi import APIRouter, Query

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
from roundhouse.server.deps import Services
from roundhouse.server.peers_view import peers_view
from roundhouse.server.routes.metrics import Window

router = APIRouter(prefix="/peers", tags=["peers"])


@router.get("", response_model=PeerList)
async def list_peers(
    services: Services,
    check: bool = Query(default=True, description="ask each peer whether it answers"),
) -> PeerList:
    """The paired machines (whether each answers now) and this daemon's peer listener."""
    return await services.peers.list(check)


@router.get("/machines", response_model=PeersView)
async def machines(services: Services) -> PeersView:
    """The paired machines as last seen through each one's change feed (nothing is asked
    now): what each told about itself (hardware, instances, load, what it can start), or
    why it could not be asked. The change feed's `peers` event carries the same."""
    return await peers_view(services.peers, services.peer_watch)


@router.get("/discover", response_model=DiscoveredList)
async def discover(services: Services) -> DiscoveredList:
    """Roundhouse daemons that answer on the LAN (mDNS, 2 s): where each listens and its
    fingerprint. Finding one trusts nothing: pairing still needs its code."""
    return await services.peers.discover()


@router.post("/code", response_model=PairingCodeReply)
async def open_code(services: Services) -> PairingCodeReply:
    """A new pairing code (voiding the last), to type on the other machine, with this
    machine's addresses, port and certificate fingerprint."""
    return services.peers.open_code()


@router.post("", response_model=PeerInfo, status_code=201)
async def pair(request: PairWith, services: Services) -> PeerInfo:
    """Pair with the machine at host:port that shows the code."""
    return await services.peers.pair_with(request)


@router.patch("/{peer_id}", response_model=PeerInfo)
async def move(peer_id: str, request: PeerMove, services: Services) -> PeerInfo:
    """The paired machine has a new address: kept once it answers there with the certificate
    pinned when pairing."""
    return await services.peers.move(peer_id, request.host, request.port)


@router.delete("/{peer_id}", response_model=Unpaired)
async def unpair(peer_id: str, services: Services) -> Unpaired:
    """Unpair: removed here, and the peer is told to remove this machine (said whether it
    could be)."""
    return await services.peers.unpair(peer_id)


@router.get("/{peer_id}/state", response_model=PeerState)
async def peer_state(peer_id: str, services: Services) -> PeerState:
    """The peer's hardware, instances, load and startable models, asked of it now."""
    async with services.peers.client(peer_id) as client:
        return await client.state()


@router.post("/{peer_id}/instances", response_model=InstanceInfo)
async def peer_start(peer_id: str, request: PeerStart, services: Services) -> InstanceInfo:
    """Start a model on the peer; answers when it is ready there."""
    async with services.peers.client(peer_id) as client:
        return await client.start(request.model)


@router.delete("/{peer_id}/instances/{instance_id}", response_model=PeerStopped)
async def peer_stop(peer_id: str, instance_id: str, services: Services) -> PeerStopped:
    """Stop an instance on the peer."""
    async with services.peers.client(peer_id) as client:
        return await client.stop(instance_id)


@router.get("/{peer_id}/metrics/{instance_id}", response_model=MetricsHistory)
async def peer_metrics(
    peer_id: str, instance_id: str, services: Services, window: Window = 300.0
) -> MetricsHistory:
    """One of the peer's instances' live figures over the window, asked of it now (its id as
    the peer knows it)."""
    async with services.peers.client(peer_id) as client:
        return await client.metrics(instance_id, window)
