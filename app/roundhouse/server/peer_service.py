"""The daemon's paired machines: its identity, the store, the open pairing code, the keys it
calls each peer with (read from the keyring once, cached), and pairing and unpairing from
either side. Built by the composition root; the routes and the gateway use it."""

from __future__ import annotations

import asyncio
import logging
import secrets
import ssl
import time
from collections.abc import Callable
from dataclasses import replace

import psutil

from roundhouse.api.peers import (
    DiscoveredList,
    DiscoveredPeer,
    PairingCodeReply,
    PairReply,
    PairRequest,
    PairWith,
    PeerInfo,
    PeerList,
    PeerListenerStatus,
    Unpaired,
)
from roundhouse.api.settings import Settings
from roundhouse.base.paths import Home
from roundhouse.core.errors import RoundhouseError, ServiceUnavailableError
from roundhouse.core.peers import pairing
from roundhouse.core.peers.client import PeerClient, PeerError, request_pairing
from roundhouse.core.peers.discovery import browse
from roundhouse.core.peers.store import Peer, PeerStore, key_hash, peer_id
from roundhouse.core.peers.tls import (
    Identity,
    fingerprint_of,
    load_or_create_identity,
    machine_name,
    pinned_context,
)
from roundhouse.server.security import is_loopback

log = logging.getLogger(__name__)

# Pairing requests the listener takes in a minute, from anyone: with MAX_WRONG tries per code
# this bounds online guessing; a person pairing needs one.
PAIR_ATTEMPTS_PER_MIN = 20


class PairingBusyError(RoundhouseError):
    title = "Too many pairing attempts"
    status = 429


class PeerService:
    """Everything about paired machines that lives in the daemon."""

    def __init__(self, home: Home, settings: Callable[[], Settings], version: str) -> None:
        self._settings = settings
        self.version = version
        self._identity: Identity | None = None
        # Why pairing cannot work on this daemon (its identity cannot be made or read).
        self.unavailable: str | None = None
        try:
            self._identity = load_or_create_identity(home.data_dir, machine_name())
        except RoundhouseError as exc:
            self.unavailable = exc.detail
            log.error("Paired machines are unavailable: %s", exc.detail)
        self.store = PeerStore(home.config_dir)
        self.codes = pairing.PairingCodes()
        self._keys: dict[str, str] = {}
        self._contexts: dict[str, ssl.SSLContext] = {}
        self.key_error: str | None = None
        self._attempts: list[float] = []
        # Told when a peer is added or removed (the gateway's list of remote instances).
        self.listeners: list[Callable[[], None]] = []
        # Where this daemon's own peer listener is: set by it (server/peer_listener.py).
        self.listener_status: Callable[[], PeerListenerStatus] = lambda: PeerListenerStatus(
            fingerprint=self.fingerprint
        )

    @property
    def identity(self) -> Identity:
        """This daemon's identity; ServiceUnavailableError, in words, when it has none."""
        if self._identity is None:
            raise ServiceUnavailableError(self.unavailable or "No identity for pairing.")
        return self._identity

    @property
    def fingerprint(self) -> str:
        return "" if self._identity is None else self._identity.fingerprint

    @property
    def name(self) -> str:
        return self._settings().peers.name.strip() or machine_name()

    async def load(self) -> None:
        """Read the keys this daemon calls its peers with, once, off the event loop."""
        for peer in self.store.list():
            try:
                key = await asyncio.to_thread(self.store.outbound_key, peer.id)
            except RoundhouseError as exc:
                self.key_error = exc.detail
                log.warning("The key for paired machine %s cannot be read: %s", peer.id, exc)
                continue
            if key:
                self._keys[peer.id] = key

    def _changed(self) -> None:
        for listener in list(self.listeners):
            try:
                listener()
            except Exception:
                log.exception("A listener of the paired machines failed")

    # -- what the gateway and the routes read --------------------------------------------

    def key_for(self, peer: str) -> str | None:
        """The key this daemon calls `peer` with (cached)."""
        return self._keys.get(peer)

    def context_for(self, peer: str) -> ssl.SSLContext | None:
        """A TLS context that trusts exactly `peer`'s pinned certificate (cached)."""
        found = self.store.get(peer)
        if found is None:
            return None
        context = self._contexts.get(found.fingerprint)
        if context is None:
            context = self._contexts[found.fingerprint] = pinned_context(found.cert_pem)
        return context

    def client(self, peer: str) -> PeerClient:
        """A client to `peer`; `async with` it."""
        found = self.store.require(peer)
        key = self._keys.get(found.id)
        if key is None:
            raise ServiceUnavailableError(
                f"The key for {found.name} ({found.id}) is not available"
                + (f": {self.key_error}" if self.key_error else ".")
                + " Remove the peer and pair again if it was lost."
            )
        return PeerClient(found, key)

    def caller(self, key: str) -> Peer | None:
        """The paired machine that calls with `key`, if one does."""
        return self.store.check_inbound(key)

    # -- the control API -----------------------------------------------------------------

    def open_code(self) -> PairingCodeReply:
        offer = self.codes.open()
        status = self.listener_status()
        settings = self._settings().peers
        return PairingCodeReply(
            code=offer.shown,
            expires_at=offer.expires_at,
            host=settings.listen_host or None,
            addresses=reachable_addresses(settings.listen_host),
            port=settings.port,
            fingerprint=self.identity.fingerprint,
            listening=status.url is not None and status.error is None,
            error=status.error
            if status.url is not None or status.error
            else "The peer listener is off: set peers.listen_host (for example 0.0.0.0) so "
            "the other machine can reach this one.",
        )

    async def pair_with(self, request: PairWith) -> PeerInfo:
        """Pair with the machine at request.host:port that shows request.code."""
        paired = await request_pairing(
            request.host,
            request.port,
            request.code,
            self.identity,
            self.name,
            self._listen_port(),
        )
        if paired.peer.fingerprint == self.identity.fingerprint:
            raise pairing.PairingRefusedError(
                "That address is this daemon itself: give the other machine's address."
            )
        await asyncio.to_thread(self.store.add, paired.peer, paired.outbound_key)
        self._keys[paired.peer.id] = paired.outbound_key
        self._changed()
        log.info("Paired with %s (%s) at %s", paired.peer.name, paired.peer.id, paired.peer.host)
        return _info(paired.peer, reachable=True, version=paired.version)

    def _listen_port(self) -> int:
        status = self.listener_status()
        return self._settings().peers.port if status.url is not None else 0

    async def move(self, peer: str, host: str, port: int) -> PeerInfo:
        """Record that `peer` is now at host:port, once it answers there with the pinned
        certificate (a different one is refused, and nothing changes)."""
        found = self.store.require(peer)
        key = self._keys.get(found.id)
        if key is None:
            raise ServiceUnavailableError(
                f"The key for {found.name} is not available: remove it and pair again."
            )
        async with PeerClient(replace(found, host=host, port=port), key) as client:
            state = await client.state()
        moved = await asyncio.to_thread(self.store.moved, found.id, host, port)
        self._changed()
        log.info("Paired machine %s (%s) is now at %s:%d", moved.name, moved.id, host, port)
        return _info(moved, reachable=True, version=state.version)

    async def unpair(self, peer: str) -> Unpaired:
        """Forget `peer` here, and tell it to forget this machine."""
        found = self.store.require(peer)
        told, why = False, ""
        try:
            async with self.client(found.id) as client:
                await client.unpair()
            told = True
        except (RoundhouseError, OSError) as exc:
            why = exc.detail if isinstance(exc, RoundhouseError) else str(exc)
        await self._forget(found)
        if told:
            message = f"Unpaired {found.name}; it forgot this machine too."
        else:
            message = (
                f"Unpaired {found.name} here, but it could not be told ({why}). Remove this "
                "machine there too (`roundhouse peers remove`) when it is back: its key no "
                "longer works here."
            )
        return Unpaired(id=found.id, told_peer=told, message=message)

    async def _forget(self, peer: Peer) -> None:
        await asyncio.to_thread(self.store.remove, peer.id)
        self._keys.pop(peer.id, None)
        self._contexts.pop(peer.fingerprint, None)
        self._changed()
        log.info("Unpaired %s (%s)", peer.name, peer.id)

    async def forgotten_by(self, peer: str) -> None:
        """`peer` unpaired this machine: forget it too."""
        found = self.store.get(peer)
        if found is not None:
            await self._forget(found)

    async def list(self, check: bool) -> PeerList:
        peers = self.store.list()
        infos = [_info(p) for p in peers]
        if check and peers:
            infos = list(await asyncio.gather(*(self._checked(p) for p in peers)))
        return PeerList(peers=infos, listener=self.listener_status())

    async def _checked(self, peer: Peer) -> PeerInfo:
        try:
            async with self.client(peer.id) as client:
                state = await client.state()
        except (PeerError, RoundhouseError) as exc:
            return _info(peer, reachable=False, error=exc.detail)
        return _info(peer, reachable=True, version=state.version)

    async def discover(self) -> DiscoveredList:
        """The daemons that answer on the LAN (mDNS), this one left out."""
        paired = {p.fingerprint for p in self.store.list()}
        found = [
            DiscoveredPeer(
                name=f.name,
                addresses=list(f.addresses),
                port=f.port,
                fingerprint=f.fingerprint,
                version=f.version,
                paired=f.fingerprint in paired,
            )
            for f in await browse()
            if f.fingerprint != self.fingerprint
        ]
        return DiscoveredList(found=found)

    # -- the peer listener's side of pairing ---------------------------------------------

    def admit_attempt(self) -> None:
        """Count a pairing request; refuse past PAIR_ATTEMPTS_PER_MIN a minute."""
        now = time.monotonic()
        self._attempts = [t for t in self._attempts if now - t < 60.0]
        if len(self._attempts) >= PAIR_ATTEMPTS_PER_MIN:
            raise PairingBusyError(
                "Too many pairing attempts in the last minute: wait a minute and try again."
            )
        self._attempts.append(now)

    async def accept(self, request: PairRequest, host: str) -> PairReply:
        """Answer a pairing request from the machine at `host` (the responder's side)."""
        try:
            their_fp = fingerprint_of(request.cert_pem)
        except RoundhouseError as exc:
            raise pairing.PairingRefusedError(
                "The pairing request's certificate is not one."
            ) from exc
        ours = self.identity.fingerprint
        if their_fp == ours:
            raise pairing.PairingRefusedError(
                "That is this daemon itself: pair with another machine's daemon."
            )
        signed = pairing.transcript(ours, their_fp, key_hash(request.key))
        proof_key = await asyncio.to_thread(self.codes.accept, ours, signed, request.proof)
        our_key = secrets.token_urlsafe(32)
        full = pairing.transcript(ours, their_fp, key_hash(request.key), key_hash(our_key))
        peer = Peer(
            id=peer_id(their_fp),
            name=request.name,
            host=host,
            port=request.port,
            cert_pem=request.cert_pem,
            fingerprint=their_fp,
            paired_at=time.time(),
            inbound_key_sha256=key_hash(our_key),
        )
        await asyncio.to_thread(self.store.add, peer, request.key)
        self._keys[peer.id] = request.key
        self._changed()
        log.info("Paired with %s (%s) at %s, asked by it", peer.name, peer.id, host)
        return PairReply(
            name=self.name,
            key=our_key,
            proof=pairing.proof(proof_key, full, pairing.RESPONDER),
            version=self.version,
        )


def _info(
    peer: Peer,
    *,
    reachable: bool | None = None,
    error: str | None = None,
    version: str | None = None,
) -> PeerInfo:
    return PeerInfo(
        id=peer.id,
        name=peer.name,
        host=peer.host,
        port=peer.port,
        fingerprint=peer.fingerprint,
        paired_at=peer.paired_at,
        reachable=reachable,
        error=error,
        version=version,
    )


def reachable_addresses(listen_host: str) -> list[str]:
    """The addresses another machine may reach a listener on `listen_host` at (IPv4)."""
    host = listen_host.strip()
    if host and host not in ("0.0.0.0", "::"):
        return [] if is_loopback(host) else [host]
    found: list[str] = []
    try:
        interfaces = psutil.net_if_addrs()
    except (OSError, psutil.Error):
        return found
    for addresses in interfaces.values():
        for address in addresses:
            if address.family.name == "AF_INET" and not address.address.startswith("127."):
                found.append(address.address)
    return found
