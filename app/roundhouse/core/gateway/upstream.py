"""HTTP clients to the engines: pooled, proxy-free, TLS checked except on loopback."""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import ssl as ssl_module
from collections.abc import AsyncIterator, Callable, Mapping
from contextvars import ContextVar
from typing import cast
from urllib.parse import urlsplit

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.client_reqrep import ClientRequest, ClientResponse
from aiohttp.connector import Connection
from multidict import CIMultiDictProxy

from roundhouse.api.instances import InstanceInfo, InstanceOrigin
from roundhouse.core.gateway.errors import UpstreamFailed

# aiohttp rather than httpx on this side (ADR 14): its C HTTP parser halves the daemon's CPU
# per relayed request and event. The daemon's own client and every other one stay on httpx.

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 600.0
SEND_TIMEOUT_S = 60.0
# Connecting is quick or the engine is gone; a reply may take minutes to start on a long
# prompt, so reading waits long (sock_read: between two reads, and for the headers once the
# body is sent), but not forever on an engine that hangs. No total: a stream lasts as long as
# the generation does.
TIMEOUT = aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT_S, sock_read=READ_TIMEOUT_S)
# aiohttp has no write timeout, and starts sock_read only once the body is sent, so an engine
# that never reads the request would hold it for ever. `Gateway.open` bounds the send by
# bounding everything up to the reply's headers: connect, send, then the longest wait for the
# first byte. That bound is only ever reached when the send itself stalled: a generation that
# is slow to start still ends at sock_read, exactly as before. Not the whole stream, which
# must last as long as the engine keeps sending.
HEADERS_TIMEOUT_S = CONNECT_TIMEOUT_S + SEND_TIMEOUT_S + READ_TIMEOUT_S
# An idle connection is dropped after 2 s, well before llama-server's (cpp-httplib's) 5 s
# keep-alive ends it from the other side: reusing a connection the engine is closing fails
# the request.
KEEPALIVE_S = 2.0
# Plain bytes from the engine: the relay splits its events and reads usage in them, and
# compressing on loopback costs CPU for nothing. The session does not decompress either
# (auto_decompress=False), so an engine that compresses anyway is relayed as it wrote it,
# with its content-encoding passed along for the client to decode.
REQUEST_HEADERS = {"accept-encoding": "identity"}

# The most of a whole (not streamed) reply the gateway reads: an embeddings reply of OpenAI's
# largest batch (2048 inputs of 3072 dimensions, as JSON text) is about 120 MiB.
REPLY_LIMIT = 256 * 1024 * 1024

# What a failed exchange with an engine raises: aiohttp's errors, and the bound on the send.
UPSTREAM_ERRORS: tuple[type[Exception], ...] = (aiohttp.ClientError, TimeoutError)


def is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ReplyTooLarge(UpstreamFailed):
    """An engine's whole reply went past REPLY_LIMIT; it was not read further."""

    code = "upstream_reply_too_large"

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"The engine's reply is larger than {limit // (1024 * 1024)} MiB, the most the "
            "gateway reads, and was cut off there. Ask for less in one request (fewer "
            "inputs, fewer tokens), or stream it."
        )


class UpstreamReply:
    """An engine's reply, read whole or relayed as it comes, then closed."""

    __slots__ = ("_response",)

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response

    @property
    def status_code(self) -> int:
        return self._response.status

    @property
    def headers(self) -> CIMultiDictProxy[str]:
        return self._response.headers

    @property
    def is_success(self) -> bool:
        return 200 <= self._response.status < 300

    async def aread(self, limit: int = REPLY_LIMIT) -> bytes:
        """The whole body, or ReplyTooLarge as soon as it is known to pass `limit` (by its
        Content-Length, else as it arrives): never more than that in memory."""
        declared = self._response.content_length
        if declared is not None and declared > limit:
            raise ReplyTooLarge(limit)
        parts: list[bytes] = []
        size = 0
        async for chunk in self._response.content.iter_any():
            size += len(chunk)
            if size > limit:
                raise ReplyTooLarge(limit)
            parts.append(chunk)
        return b"".join(parts)

    def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive, in the engine's own chunks."""
        return self._response.content.iter_any()

    def close(self) -> None:
        """A reply read to its end gives its connection back for reuse; one cut short (a
        client gone mid-stream) closes it, which is how the engine learns to stop
        generating for nobody."""
        if self._response.content.at_eof():
            self._response.release()
        else:
            self._response.close()


class _CountingHandler(ResponseHandler):
    """A connection that counts the bytes the engine sent on it: how the gateway knows
    whether a reply had begun when a request fails."""

    received = 0

    def data_received(self, data: bytes) -> None:
        self.received += len(data)
        super().data_received(data)


class _CountingConnector(aiohttp.TCPConnector):
    """The pool's connections, each a _CountingHandler."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        # aiohttp makes each connection's protocol with this factory; it has no public way
        # to choose the protocol class.
        self._factory = cast(
            "functools.partial[ResponseHandler]",
            functools.partial(_CountingHandler, loop=self._loop),
        )


class _Attempt:
    """One send of a request: the connection it went out on, and what that connection had
    received from the engine before it."""

    __slots__ = ("before", "close_after", "connection")

    def __init__(self, *, close_after: bool = False) -> None:
        self.connection: _CountingHandler | None = None
        self.before = 0
        # Whether the connection is closed after this reply rather than pooled.
        self.close_after = close_after

    def never_received(self, exc: BaseException) -> bool:
        """Whether a request that failed with `exc` certainly never reached the engine's
        handling, so that sending it again cannot do anything twice: it went out on a
        connection (one could be made), not one byte of a reply came back on it, and the
        failure is not a wait that ran out (an engine slow to answer has the request).
        Whatever the error's class: a kept-alive connection the engine closed as it was
        reused shows as a disconnect, a reset or a failed write, depending on the moment."""
        if isinstance(exc, TimeoutError) or self.connection is None:
            return False
        return self.connection.received == self.before


# The send under way in this task, seen by _TrackedRequest (aiohttp makes the request object).
_ATTEMPT: ContextVar[_Attempt | None] = ContextVar("roundhouse_upstream_attempt", default=None)


class _TrackedRequest(ClientRequest):
    """A request that notes which connection it goes out on, for `_Attempt`."""

    async def send(self, conn: Connection) -> ClientResponse:
        attempt = _ATTEMPT.get()
        protocol = conn.protocol
        if attempt is not None and isinstance(protocol, _CountingHandler):
            attempt.connection = protocol
            attempt.before = protocol.received
            if attempt.close_after:
                # Marked before the reply: aiohttp pools a connection as soon as it is read.
                protocol.force_close()
        return await super().send(conn)


def _no_pin(info: InstanceInfo) -> ssl_module.SSLContext | None:
    return None


class Upstream:
    """One pool for engines on this machine, one for endpoints elsewhere and one per paired
    machine, and beside each a client that opens a new connection for every request, for
    sending again."""

    def __init__(
        self, pinned: Callable[[InstanceInfo], ssl_module.SSLContext | None] = _no_pin
    ) -> None:
        # A paired machine's TLS context: trusts exactly the certificate pinned at pairing.
        self._pinned = pinned
        # Per paired machine and pinned certificate (a new pairing is a new pool), pooled
        # and fresh.
        self._peers: dict[tuple[str, bool], tuple[int, aiohttp.ClientSession]] = {}
        self._local: aiohttp.ClientSession | None = None
        self._remote: aiohttp.ClientSession | None = None
        self._fresh_local: aiohttp.ClientSession | None = None
        self._fresh_remote: aiohttp.ClientSession | None = None
        # Engines (by URL) that closed a kept-alive connection under a request. llama-server
        # (cpp-httplib) ends its connection after every streamed reply while saying
        # keep-alive: pooled, that connection fails the next request, which is then sent
        # again, a failed write and a resend on the way to every first token.
        self._closing: set[str] = set()

    def keeps_after_stream(self, info: InstanceInfo) -> bool:
        """Whether a connection that carried a streamed reply is worth keeping for the next
        request to `info`: not where the engine has been seen to close one under a request."""
        return info.url not in self._closing

    async def post(
        self,
        info: InstanceInfo,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        *,
        stream: bool = False,
    ) -> ClientResponse:
        """POST on the pool; a request the engine never received (a kept-alive connection
        it closed as it was reused: cpp-httplib ends one after a few requests, at its
        keep-alive's end, and after every streamed reply) is sent once more on a new
        connection, as browsers and urllib3 do. A request the engine began to answer, even
        with an error, is never sent twice. Redirects are not followed. A `stream`'s
        connection is not pooled after it where the engine closes such connections."""
        attempt = _Attempt(close_after=stream and not self.keeps_after_stream(info))
        token = _ATTEMPT.set(attempt)
        try:
            return await self.client_for(info).post(
                url, data=body, headers=headers, allow_redirects=False
            )
        except UPSTREAM_ERRORS as exc:
            if not attempt.never_received(exc):
                raise
            self._closing.add(info.url)
        finally:
            _ATTEMPT.reset(token)
        # A new connection, certainly not one the engine is closing: another from the pool
        # could be just as stale.
        return await self._fresh_for(info).post(
            url, data=body, headers=headers, allow_redirects=False
        )

    def _fresh_for(self, info: InstanceInfo) -> aiohttp.ClientSession:
        if info.origin == InstanceOrigin.PEER:
            return self._peer_session(info, fresh=True)
        if is_loopback(info.base_url):
            if self._fresh_local is None:
                self._fresh_local = _session(ssl=False, fresh=True)
            return self._fresh_local
        if self._fresh_remote is None:
            self._fresh_remote = _session(ssl=True, fresh=True)
        return self._fresh_remote

    def _peer_session(self, info: InstanceInfo, *, fresh: bool) -> aiohttp.ClientSession:
        """The pool for a paired machine: its pinned certificate only, on loopback too."""
        context = self._pinned(info)
        if context is None:
            raise aiohttp.ClientConnectionError(
                "the machine is no longer paired with this one (no pinned certificate)"
            )
        key = (info.machine or info.url, fresh)
        held = self._peers.get(key)
        if held is not None and held[0] == id(context):
            return held[1]
        if held is not None:
            # Paired again since: the old pool trusts the old certificate.
            _close_later(held[1])
        session = _session(ssl=context, fresh=fresh)
        self._peers[key] = (id(context), session)
        return session

    def client_for(self, info: InstanceInfo) -> aiohttp.ClientSession:
        # Made on first use: a session belongs to the running event loop.
        if info.origin == InstanceOrigin.PEER:
            return self._peer_session(info, fresh=False)
        if is_loopback(info.base_url):
            if self._local is None:
                # ssl=False: loopback engines speak plain http, and building the default
                # TLS context costs time for nothing.
                self._local = _session(ssl=False)
            return self._local
        if self._remote is None:
            # An endpoint on another machine: its certificate is checked.
            self._remote = _session(ssl=True)
        return self._remote

    async def aclose(self) -> None:
        peers = [session for _, session in self._peers.values()]
        self._peers.clear()
        for session in (self._local, self._remote, self._fresh_local, self._fresh_remote, *peers):
            if session is not None:
                await session.close()
        self._local = self._remote = self._fresh_local = self._fresh_remote = None


def _close_later(session: aiohttp.ClientSession) -> None:
    """Close a pool no request will take again; streams on it end as they would anyway."""
    task = asyncio.get_running_loop().create_task(session.close())
    _CLOSING.add(task)
    task.add_done_callback(_CLOSING.discard)


# Closes under way: held so that they are not collected before they end.
_CLOSING: set[asyncio.Task[None]] = set()


def _session(*, ssl: bool | ssl_module.SSLContext, fresh: bool = False) -> aiohttp.ClientSession:
    # No limit on connections: many concurrent streams each hold one, and the gateway's own
    # queue already bounds them. trust_env=False: a proxy from HTTP(S)_PROXY must never see
    # loopback traffic, nor an endpoint whose address the user gave directly. `fresh`: a
    # new connection for each request, closed after it (force_close), never one kept alive.
    connector: aiohttp.TCPConnector
    if fresh:
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, force_close=True, ssl=ssl)
    else:
        connector = _CountingConnector(
            limit=0, limit_per_host=0, keepalive_timeout=KEEPALIVE_S, ssl=ssl
        )
    return aiohttp.ClientSession(
        connector=connector,
        timeout=TIMEOUT,
        trust_env=False,
        auto_decompress=False,
        request_class=_TrackedRequest,
    )
