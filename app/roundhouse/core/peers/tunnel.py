"""Mutual-TLS relays between paired machines for llama.cpp's RPC, which has no security of its
own: the lender's relay in front of its loopback rpc-server, the head's loopback relay to it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from roundhouse.core.peers.tls import Identity, fingerprint_of, fingerprint_of_der, pinned_context

log = logging.getLogger(__name__)

CHUNK = 1 << 16
HANDSHAKE_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 10.0

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def lender_context(identity: Identity, peer_cert_pem: str) -> ssl.SSLContext:
    """The lender's side: presents this daemon's certificate and requires the client to
    present exactly the paired machine's pinned one (mutual TLS)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(identity.cert_path), str(identity.key_path))
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cadata=peer_cert_pem)
    return context


def head_context(identity: Identity, peer_cert_pem: str) -> ssl.SSLContext:
    """The head's side: trusts only the lender's pinned certificate and presents this
    daemon's own as its client certificate."""
    context = pinned_context(peer_cert_pem)
    context.load_cert_chain(str(identity.cert_path), str(identity.key_path))
    return context


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (OSError, ssl.SSLError, asyncio.IncompleteReadError):
        pass
    finally:
        # One side ended: the other gets no more, so both are closed (rpc-server's protocol
        # has no half-closed state worth keeping).
        writer.close()


async def splice(a: Streams, b: Streams) -> None:
    """Copy both ways between `a` and `b` until either ends; both are closed then."""
    forward = asyncio.create_task(_pipe(a[0], b[1]))
    back = asyncio.create_task(_pipe(b[0], a[1]))
    try:
        await asyncio.wait({forward, back}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for writer in (a[1], b[1]):
            writer.close()
        for task in (forward, back):
            task.cancel()
        await asyncio.gather(forward, back, return_exceptions=True)
        for writer in (a[1], b[1]):
            with contextlib.suppress(Exception):
                await writer.wait_closed()


@dataclass
class RelayStats:
    """What a relay has carried: connections now, ever, and refused; when it last had none."""

    active: int = 0
    served: int = 0
    refused: int = 0
    idle_since: float = 0.0


class Relay:
    """A listener that admits connections (from `allowed_host` only when given, over TLS with
    `tls` when given, then as `admit` says), opens `connect()` for each and splices the two."""

    def __init__(
        self,
        connect: Callable[[], Awaitable[Streams]],
        admit: Callable[[Streams], Awaitable[bool]],
        name: str,
        *,
        tls: ssl.SSLContext | None = None,
        allowed_host: str | None = None,
    ) -> None:
        self._connect = connect
        self._admit = admit
        self._tls = tls
        self._allowed_host = allowed_host
        self.name = name
        self.stats = RelayStats(idle_since=time.monotonic())
        self._socket: socket.socket | None = None
        self._acceptor: asyncio.Task[None] | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.host = ""
        self.port = 0

    async def listen(self, host: str, port: int = 0) -> int:
        """Listen on `host` (one address, never every interface); the port it got."""
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, _, _, _, address = infos[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            sock.listen(16)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._socket = sock
        self.host, self.port = host, int(sock.getsockname()[1])
        self._acceptor = loop.create_task(self._accept_loop(sock), name=f"relay {self.name}")
        return self.port

    async def _accept_loop(self, sock: socket.socket) -> None:
        # Accepted by hand, not by asyncio.start_server: the source address is checked
        # before any TLS, and TLS is then begun on the accepted socket (StreamWriter's
        # start_tls does not work on uvloop, the daemon's loop).
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, peer = await loop.sock_accept(sock)
            except OSError as exc:
                log.warning("Relay %s stopped accepting: %s", self.name, exc)
                return
            source = str(peer[0]) if peer else ""
            if self._allowed_host is not None and source != self._allowed_host:
                # A machine that is not the paired one gets nothing to talk to.
                self.stats.refused += 1
                log.warning("Relay %s refused a connection from %s", self.name, source)
                conn.close()
                continue
            task = loop.create_task(self._handle(conn, source))
            self._handlers.add(task)
            task.add_done_callback(self._handlers.discard)

    async def _handle(self, conn: socket.socket, source: str) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=CHUNK * 4)
        protocol = asyncio.StreamReaderProtocol(reader)
        try:
            transport, _ = await loop.connect_accepted_socket(
                lambda: protocol,
                conn,
                ssl=self._tls,
                ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S if self._tls else None,
            )
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError) as exc:
            self.stats.refused += 1
            log.warning("Relay %s refused a client from %s: %s", self.name, source, exc)
            conn.close()
            return
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        try:
            if not await self._admit((reader, writer)):
                self.stats.refused += 1
                log.warning("Relay %s refused a client from %s", self.name, source)
                writer.close()
                return
            try:
                upstream = await asyncio.wait_for(self._connect(), CONNECT_TIMEOUT_S)
            except (OSError, ssl.SSLError, TimeoutError) as exc:
                log.warning("Relay %s could not reach its other end: %s", self.name, exc)
                writer.close()
                return
            self.stats.active += 1
            self.stats.served += 1
            try:
                await splice((reader, writer), upstream)
            finally:
                self.stats.active -= 1
                if not self.stats.active:
                    self.stats.idle_since = time.monotonic()
        except Exception:
            log.exception("Relay %s failed on a connection", self.name)
            writer.close()

    async def close(self) -> None:
        """Stop listening and cut every connection it carries."""
        if self._acceptor is not None:
            self._acceptor.cancel()
            await asyncio.gather(self._acceptor, return_exceptions=True)
            self._acceptor = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        handlers = list(self._handlers)
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)


def lender_relay(
    identity: Identity, peer_cert_pem: str, allowed_host: str, upstream_port: int, name: str
) -> Relay:
    """The lender's relay: admits only a connection from `allowed_host` (the paired machine's
    address) that completes mutual TLS with that machine's pinned certificate, and carries it
    to the rpc-server on 127.0.0.1:`upstream_port`."""
    context = lender_context(identity, peer_cert_pem)
    expected = fingerprint_of(peer_cert_pem)

    async def admit(streams: Streams) -> bool:
        ssl_object = streams[1].get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        # The context already required that certificate; the pin is checked again here.
        return der is not None and fingerprint_of_der(der) == expected

    async def connect() -> Streams:
        return await asyncio.open_connection("127.0.0.1", upstream_port)

    return Relay(connect, admit, name, tls=context, allowed_host=allowed_host)


def head_relay(
    identity: Identity, peer_cert_pem: str, peer_host: str, peer_port: int, name: str
) -> Relay:
    """The head's relay, listening on loopback for llama-server: each connection goes to the
    lender's relay at peer_host:peer_port over mutual TLS with the pinned certificate."""
    context = head_context(identity, peer_cert_pem)
    expected = fingerprint_of(peer_cert_pem)

    async def admit(streams: Streams) -> bool:
        return True

    async def connect() -> Streams:
        reader, writer = await asyncio.open_connection(
            peer_host,
            peer_port,
            ssl=context,
            server_hostname="",
            ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S,
        )
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        if der is None or fingerprint_of_der(der) != expected:
            writer.close()
            raise ssl.SSLError(f"{name} presented a certificate other than the pinned one")
        return reader, writer

    return Relay(connect, admit, name)
