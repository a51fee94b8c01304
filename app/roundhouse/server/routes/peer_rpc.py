"""The routes a paired machine calls to borrow this machine's memory for llama.cpp's RPC
(/peer/v1/rpc-servers): an rpc-server on loopback behind a mutual-TLS relay, and its end."""

from __future__ import annotations

from fastapi import APIRouter, Request

from roundhouse.api.rpc import PeerRpcLease, PeerRpcLeaseList
from roundhouse.core.errors import NotFoundError
from roundhouse.core.peers.client import PEER_PREFIX
from roundhouse.server.deps import Services
from roundhouse.server.routes.peer_api import caller

router = APIRouter(prefix=f"{PEER_PREFIX}/rpc-servers", tags=["peer"])


@router.post("", response_model=PeerRpcLease, status_code=201)
async def lend(request: Request, services: Services) -> PeerRpcLease:
    """Run rpc-server on 127.0.0.1 here and a relay on the address the caller reached this
    machine at, admitting only the caller's address and certificate; answers the relay's
    port once both run."""
    peer = services.peers.store.get(caller(request))
    if peer is None:
        raise NotFoundError("This machine is not paired with the caller any more.")
    came_from = request.client.host if request.client else ""
    server = request.scope.get("server")
    reached_at = str(server[0]) if server else ""
    lease = await services.rpc_lending.lend(services, peer, came_from, reached_at)
    return lease.answer()


@router.get("", response_model=PeerRpcLeaseList)
async def leases(request: Request, services: Services) -> PeerRpcLeaseList:
    """The rpc-servers lent to the caller."""
    return PeerRpcLeaseList(leases=[x.answer() for x in services.rpc_lending.of(caller(request))])


@router.delete("/{lease_id}", response_model=PeerRpcLease)
async def release(request: Request, lease_id: str, services: Services) -> PeerRpcLease:
    """End the lease: the relay closes and the rpc-server stops."""
    lease = await services.rpc_lending.release(services, caller(request), lease_id)
    return lease.answer()
