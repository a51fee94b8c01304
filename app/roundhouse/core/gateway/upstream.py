"""HTTP clients to the engines: pooled, proxy-free, TLS checked except on loopback."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import aiohttp
from multidict import CIMultiDictProxy

from roundhouse.api.instances import InstanceInfo
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
# A kept-alive connection the engine closed as it was reused: nothing was answered.
STALE_CONNECTION: tuple[type[Exception], ...] = (
    aiohttp.ServerDisconnectedError,
    aiohttp.ClientOSError,
)


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


class Upstream:
    """One pool for engines on this machine and one for endpoints elsewhere."""

    def __init__(self) -> None:
        self._local: aiohttp.ClientSession | None = None
        self._remote: aiohttp.ClientSession | None = None

    def client_for(self, info: InstanceInfo) -> aiohttp.ClientSession:
        # Made on first use: a session belongs to the running event loop.
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
        for session in (self._local, self._remote):
            if session is not None:
                await session.close()
        self._local = self._remote = None


def _session(*, ssl: bool) -> aiohttp.ClientSession:
    # No limit on connections: many concurrent streams each hold one, and the gateway's own
    # queue already bounds them. trust_env=False: a proxy from HTTP(S)_PROXY must never see
    # loopback traffic, nor an endpoint whose address the user gave directly.
    connector = aiohttp.TCPConnector(
        limit=0, limit_per_host=0, keepalive_timeout=KEEPALIVE_S, ssl=ssl
    )
    return aiohttp.ClientSession(
        connector=connector, timeout=TIMEOUT, trust_env=False, auto_decompress=False
    )
