"""Each paired machine's instances, kept current from its change feed, as this gateway routes to
them: ids `peer:instance`, the machine's gateway as their URL, its listed ids as their names."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass

from httpx_sse import EventSource

from roundhouse.api.gateway import ModelState
from roundhouse.api.instances import InstanceInfo, InstanceOrigin
from roundhouse.api.peers import PeerState
from roundhouse.base.tasks import cancel_and_wait
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.infra.changes import Changes
from roundhouse.core.peers.client import PEER_PREFIX, PeerClient
from roundhouse.core.peers.store import Peer

log = logging.getLogger(__name__)

# After a lost connection, the next try waits this long, doubling up to the cap: a machine
# that is off costs one attempt every half minute, and one that comes back is seen quickly.
RETRY_FIRST_S = 1.0
RETRY_MAX_S = 30.0
# Events arriving together (a start publishes instances, then gateway) cost one reading.
SETTLE_S = 0.1
# The feed's kinds that change what a machine serves; the others are not asked for.
_KINDS = ("instances", "gateway")


@dataclass(frozen=True)
class Seen:
    """What a machine last told about itself, or why it could not be asked."""

    state: PeerState | None = None
    error: str | None = None


def peer_url(peer: Peer) -> str:
    host = f"[{peer.host}]" if ":" in peer.host else peer.host
    return f"https://{host}:{peer.port}"


def as_routed(peer: Peer, state: PeerState) -> list[InstanceInfo]:
    """The machine's instances as this gateway sees them: reached through its gateway, named
    by what its gateway lists for each (its own instances only: never a third machine's)."""
    url = peer_url(peer)
    ids: dict[str, list[str]] = {}
    for entry in state.listed:
        if entry.instance is not None and entry.state != ModelState.STARTABLE:
            ids.setdefault(entry.instance, []).append(entry.id)
    out = []
    for info in state.instances:
        if info.origin == InstanceOrigin.PEER or info.id not in ids:
            continue
        out.append(
            info.model_copy(
                update={
                    "id": f"{peer.id}:{info.id}",
                    "origin": InstanceOrigin.PEER,
                    "machine": peer.id,
                    "name": peer.name,
                    "host": peer.host,
                    "port": peer.port,
                    "url": url,
                    "base_url": f"{url}/v1",
                    "models": ids[info.id],
                    "pid": None,
                    "argv": [],
                    "log_path": None,
                    "may_serve_presets": True,
                    "unprotected": None,
                }
            )
        )
    return out


class PeerWatch:
    """Follows every paired machine's change feed (one connection each) and reads its state
    again when what it serves changes; offers the instances to the gateway."""

    def __init__(
        self,
        peers: Callable[[], list[Peer]],
        client: Callable[[str], PeerClient],
        key: Callable[[str], str | None],
        context: Callable[[str], ssl.SSLContext | None],
    ) -> None:
        self._peers = peers
        self._client = client
        self._key = key
        self._context = context
        self._seen: dict[str, Seen] = {}
        self._routed: list[InstanceInfo] = []
        self._tasks: dict[str, asyncio.Task[None]] = {}
        # Told when what the paired machines serve changes (the feed's gateway event).
        self.changes = Changes()
        # Told whenever what a machine told (or why it could not be asked) is read anew:
        # the feed's peers event (the Machines page).
        self.seen_changes = Changes()

    # -- what the gateway reads (RemoteInstances) ----------------------------------------

    def instances(self) -> list[InstanceInfo]:
        return self._routed

    def key(self, info: InstanceInfo) -> str | None:
        return self._key(info.machine) if info.machine else None

    def context(self, info: InstanceInfo) -> ssl.SSLContext | None:
        return self._context(info.machine) if info.machine else None

    def seen(self, peer: str) -> Seen:
        return self._seen.get(peer, Seen())

    # -- following -------------------------------------------------------------------------

    def sync(self) -> None:
        """Follow the machines paired now: a new one from now on, an unpaired one no longer."""
        paired = {p.id: p for p in self._peers()}
        for gone in set(self._tasks) - set(paired):
            self._tasks.pop(gone).cancel()
            self._seen.pop(gone, None)
        for peer in paired.values():
            task = self._tasks.get(peer.id)
            if task is None or task.done():
                self._tasks[peer.id] = asyncio.create_task(
                    self._follow(peer), name=f"peer-watch-{peer.id}"
                )
        self._publish()

    async def aclose(self) -> None:
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for task in tasks:
            await cancel_and_wait(task)

    async def _follow(self, peer: Peer) -> None:
        wait = RETRY_FIRST_S
        while True:
            try:
                async with self._client(peer.id) as client:
                    await self._read(peer, client)
                    wait = RETRY_FIRST_S
                    await self._listen(peer, client)
                error = f"{peer.name} closed its change feed"
            except RoundhouseError as exc:
                error = exc.detail
            except Exception as exc:  # the watch must go on; a bug shows in the log
                log.exception("Following paired machine %s failed", peer.id)
                error = f"{exc.__class__.__name__}: {exc}"
            # Not reachable: nothing is routed there until it answers again.
            self._seen[peer.id] = Seen(error=error)
            self._publish()
            await asyncio.sleep(wait)
            wait = min(RETRY_MAX_S, wait * 2)

    async def _read(self, peer: Peer, client: PeerClient) -> None:
        self._seen[peer.id] = Seen(state=await client.state())
        self._publish()

    async def _listen(self, peer: Peer, client: PeerClient) -> None:
        """Read the state again after each event that changes it (a burst read once)."""
        params = {"kinds": ",".join(_KINDS)}
        pending: asyncio.Task[None] | None = None
        try:
            async with client.stream("GET", f"{PEER_PREFIX}/events", params=params) as response:
                # Any event (a reset included) may change what the machine serves; its data
                # is not read: the state is asked for once the burst settles.
                async for _ in EventSource(response).aiter_sse():
                    if pending is None or pending.done():
                        pending = asyncio.create_task(self._settled(peer, client))
        finally:
            if pending is not None:
                await cancel_and_wait(pending)

    async def _settled(self, peer: Peer, client: PeerClient) -> None:
        await asyncio.sleep(SETTLE_S)
        with contextlib.suppress(RoundhouseError):
            # A failed reading ends with the feed too, which says why.
            await self._read(peer, client)

    def _publish(self) -> None:
        self.seen_changes.touch()
        paired = {p.id: p for p in self._peers()}
        routed: list[InstanceInfo] = []
        for peer_id, seen in self._seen.items():
            peer = paired.get(peer_id)
            if peer is not None and seen.state is not None:
                routed += as_routed(peer, seen.state)
        if routed != self._routed:
            self._routed = routed
            self.changes.touch()
