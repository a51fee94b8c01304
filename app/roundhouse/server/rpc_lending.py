"""llama.cpp RPC lent to paired machines: an rpc-server on loopback per request, and in front of
it a mutual-TLS relay on the address the caller reached this machine at (ADR 40)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from roundhouse.api.rpc import PeerRpcLease, RpcServerRequest
from roundhouse.core.engines.rpc import WILDCARDS
from roundhouse.core.errors import ConflictError, InvalidInputError, NotFoundError
from roundhouse.core.infra.ports import free_port
from roundhouse.core.peers.store import Peer
from roundhouse.core.peers.tunnel import Relay, lender_relay

if TYPE_CHECKING:
    from roundhouse.server.services import DaemonServices

log = logging.getLogger(__name__)

# With no connection left for this long after it had one, the head's llama-server ended (or
# its daemon died): the lease ends. Long enough for llama-server's reconnects while loading.
IDLE_GRACE_S = 30.0
# A lease never used at all (the head failed before llama-server started) ends after this.
UNUSED_GRACE_S = 300.0
CHECK_EVERY_S = 1.0
# What one paired machine may borrow at once: an instance takes one per machine, so this is
# several instances' worth, and a caller gone wrong cannot fill this machine with workers.
MAX_LEASES_PER_PEER = 8


@dataclass
class Lease:
    """One rpc-server lent to one paired machine, and the relay in front of it."""

    id: str
    peer: str
    worker: str
    relay: Relay
    started_at: float
    free_bytes: int | None
    total_bytes: int | None

    def answer(self) -> PeerRpcLease:
        return PeerRpcLease(
            id=self.id,
            port=self.relay.port,
            free_bytes=self.free_bytes,
            total_bytes=self.total_bytes,
        )


class RpcLending:
    """The rpc-servers this daemon lends to its paired machines, each ended when the caller
    releases it, unpairs, or stops using it (IDLE_GRACE_S)."""

    def __init__(
        self, *, idle_grace_s: float = IDLE_GRACE_S, unused_grace_s: float = UNUSED_GRACE_S
    ) -> None:
        self._leases: dict[str, Lease] = {}
        self._idle_grace_s = idle_grace_s
        self._unused_grace_s = unused_grace_s
        self._watch: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def of(self, peer: str) -> list[Lease]:
        return [lease for lease in self._leases.values() if lease.peer == peer]

    async def lend(
        self, services: DaemonServices, peer: Peer, came_from: str, reached_at: str
    ) -> Lease:
        """Start an rpc-server on 127.0.0.1 and a relay on `reached_at` (the address the caller
        reached this machine at) that admits only `came_from` with `peer`'s certificate."""
        if reached_at.strip() in WILDCARDS or not came_from:
            raise InvalidInputError(
                "This machine cannot tell which of its addresses the paired machine reached: "
                "set peers.listen_host to one address."
            )
        if len(self.of(peer.id)) >= MAX_LEASES_PER_PEER:
            raise ConflictError(
                f"This machine already lends {MAX_LEASES_PER_PEER} rpc-servers to {peer.name}: "
                "stop an instance split across it there first."
            )
        lease_id = uuid.uuid4().hex[:12]
        worker = await services.instances.start_rpc_server(
            RpcServerRequest(
                host="127.0.0.1",
                port=free_port("127.0.0.1"),
                owner=f"peer:{peer.id}:{lease_id}",
            )
        )
        relay = lender_relay(
            services.peers.identity,
            peer.cert_pem,
            came_from,
            worker.port,
            f"rpc-{lease_id} for {peer.name}",
        )
        try:
            await relay.listen(reached_at)
        except BaseException:
            with contextlib.suppress(Exception):
                await services.instances.stop_rpc_server(worker.id)
            raise
        lease = Lease(
            lease_id,
            peer.id,
            worker.id,
            relay,
            time.monotonic(),
            worker.free_bytes,
            worker.total_bytes,
        )
        self._leases[lease_id] = lease
        self._ensure_watch(services)
        log.info(
            "Lent an rpc-server to %s (%s): relay on %s:%d for %s only",
            peer.name,
            peer.id,
            reached_at,
            relay.port,
            came_from,
        )
        return lease

    async def release(self, services: DaemonServices, peer: str, lease_id: str) -> Lease:
        """End the lease `lease_id` of `peer` (another machine's is not found)."""
        lease = self._leases.get(lease_id)
        if lease is None or lease.peer != peer:
            raise NotFoundError(f"No rpc-server {lease_id!r} is lent to this machine.")
        await self._end(services, lease)
        return lease

    async def _end(self, services: DaemonServices, lease: Lease) -> None:
        if self._leases.pop(lease.id, None) is None:
            return
        await lease.relay.close()
        with contextlib.suppress(NotFoundError):
            await services.instances.stop_rpc_server(lease.worker)
        log.info("The rpc-server lent as %s to %s ended", lease.id, lease.peer)

    async def keep_only(self, services: DaemonServices, peers: set[str]) -> None:
        """End the leases of machines no longer paired."""
        for lease in list(self._leases.values()):
            if lease.peer not in peers:
                await self._end(services, lease)

    def forget_unpaired(self, services: DaemonServices) -> None:
        """Told when a machine is paired or unpaired: end the leases of the unpaired soon."""
        paired = {p.id for p in services.peers.store.list()}
        if any(lease.peer not in paired for lease in self._leases.values()):
            task = asyncio.get_running_loop().create_task(self.keep_only(services, paired))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def stop_all(self, services: DaemonServices) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
            self._watch = None
        for lease in list(self._leases.values()):
            await self._end(services, lease)

    def _ensure_watch(self, services: DaemonServices) -> None:
        if self._watch is None or self._watch.done():
            self._watch = asyncio.get_running_loop().create_task(
                self._follow(services), name="rpc-lending"
            )

    async def _follow(self, services: DaemonServices) -> None:
        """End the leases nobody uses: llama-server on the head ended, or never came."""
        while self._leases:
            await asyncio.sleep(CHECK_EVERY_S)
            now = time.monotonic()
            for lease in list(self._leases.values()):
                stats = lease.relay.stats
                if stats.active:
                    continue
                unused = not stats.served and now - lease.started_at > self._unused_grace_s
                idle = stats.served and now - stats.idle_since > self._idle_grace_s
                if unused or idle:
                    log.info(
                        "The rpc-server lent as %s is no longer used by %s: ending it",
                        lease.id,
                        lease.peer,
                    )
                    try:
                        await self._end(services, lease)
                    except Exception:
                        log.exception("Ending the lent rpc-server %s failed", lease.id)
