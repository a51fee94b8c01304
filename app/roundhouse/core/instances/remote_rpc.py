"""An instance's llama.cpp RPC workers on paired machines: each asked for before llama-server
starts, reached through a loopback relay over mutual TLS, released when the instance ends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from roundhouse.api.engines import LaunchParams
from roundhouse.api.rpc import MachineMemory, PeerRpcLease, SplitProposal
from roundhouse.core.errors import InvalidInputError, RoundhouseError
from roundhouse.core.peers.client import PEER_PREFIX, PeerClient, PeerError
from roundhouse.core.peers.tls import Identity
from roundhouse.core.peers.tunnel import Relay, head_relay

log = logging.getLogger(__name__)

RPC_PATH = f"{PEER_PREFIX}/rpc-servers"


@dataclass(frozen=True)
class PeerLink:
    """One paired machine as the head reaches it: where, its pinned certificate, a client."""

    id: str
    name: str
    host: str
    cert_pem: str
    open_client: Callable[[], PeerClient]


# The split the fit estimate proposes for `params` over the lent workers; None: no estimate
# (llama.cpp then splits by each device's free memory itself).
SplitFor = Callable[[LaunchParams, Sequence[MachineMemory]], Awaitable[SplitProposal | None]]


@dataclass
class Borrowed:
    """One rpc-server a paired machine lent to an instance here, and the relay to it."""

    link: PeerLink
    lease: PeerRpcLease
    relay: Relay

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.relay.port}"


class RemoteRpcWorkers:
    """The rpc-servers paired machines lend to this daemon's instances, by instance."""

    def __init__(
        self,
        link_for: Callable[[str], PeerLink],
        identity: Callable[[], Identity],
        split_for: SplitFor | None = None,
    ) -> None:
        self._link_for = link_for
        self._identity = identity
        self._split_for = split_for
        self._borrowed: dict[str, list[Borrowed]] = {}

    def check(self, names: Sequence[str]) -> None:
        """Refuse in words, before a start, a name that is no paired machine."""
        links = [self._link_for(name) for name in names]
        if len({link.id for link in links}) != len(links):
            raise InvalidInputError("A paired machine is named twice in --across: name it once.")

    def of(self, owner: str) -> list[Borrowed]:
        return list(self._borrowed.get(owner, ()))

    async def lease(self, owner: str, params: LaunchParams) -> LaunchParams:
        """Ask each machine of `params.across` for an rpc-server, open a relay to each, and
        return the params llama-server starts with (--rpc the relays, the split proposed).
        On any failure what was lent so far is released, and the error says which machine."""
        if not params.across:
            return params
        self.check(params.across)
        links = [self._link_for(name) for name in params.across]
        try:
            for link in links:
                self._borrowed.setdefault(owner, []).append(await self._borrow(link, owner))
            return await self._params(params, self.of(owner))
        except BaseException:
            await self.release(owner)
            raise

    async def _borrow(self, link: PeerLink, owner: str) -> Borrowed:
        try:
            async with link.open_client() as client:
                reply = await client.request("POST", RPC_PATH)
            lease = PeerRpcLease.model_validate(reply)
        except (PeerError, ValueError) as exc:
            detail = exc.detail if isinstance(exc, PeerError) else str(exc)
            raise PeerError(f"{link.name} did not lend an rpc-server: {detail}") from exc
        relay = head_relay(
            self._identity(), link.cert_pem, link.host, lease.port, f"rpc to {link.name}"
        )
        borrowed = Borrowed(link, lease, relay)
        try:
            await relay.listen("127.0.0.1")
        except BaseException:
            await _give_back(borrowed)
            raise
        log.info(
            "Instance %s borrows %s's rpc-server %s through 127.0.0.1:%d",
            owner,
            link.name,
            lease.id,
            relay.port,
        )
        return borrowed

    async def _params(self, params: LaunchParams, borrowed: list[Borrowed]) -> LaunchParams:
        addresses = tuple(b.address for b in borrowed)
        update: dict[str, object] = {"rpc": (*addresses, *params.rpc)}
        # A split the user gave, or other workers of their own, are kept as given.
        if not params.tensor_split and not params.rpc and self._split_for is not None:
            workers = [
                MachineMemory(address=b.address, free_bytes=b.lease.free_bytes or 0)
                for b in borrowed
            ]
            proposal = await self._split_for(params, workers)
            if proposal is not None:
                if proposal.tensor_split:
                    update["tensor_split"] = tuple(proposal.tensor_split)
                if params.n_gpu_layers in (None, "auto"):
                    update["n_gpu_layers"] = proposal.n_gpu_layers
        return params.model_copy(update=update)

    async def release(self, owner: str) -> None:
        """Close the relays of `owner` and ask each machine to end its rpc-server."""
        borrowed = self._borrowed.pop(owner, [])
        await asyncio.gather(*(_give_back(b) for b in borrowed))

    async def release_all(self) -> None:
        for owner in list(self._borrowed):
            await self.release(owner)


async def _give_back(borrowed: Borrowed) -> None:
    await borrowed.relay.close()
    try:
        async with borrowed.link.open_client() as client:
            await client.request("DELETE", f"{RPC_PATH}/{borrowed.lease.id}")
    except (RoundhouseError, ValueError, OSError) as exc:
        # The lender also ends a lease nobody uses (ADR 40): nothing lingers there.
        detail = exc.detail if isinstance(exc, RoundhouseError) else str(exc)
        log.warning(
            "Could not tell %s to end the rpc-server %s: %s",
            borrowed.link.name,
            borrowed.lease.id,
            detail,
        )
