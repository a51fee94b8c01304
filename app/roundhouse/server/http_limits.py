"""uvicorn as the daemon's listeners run it: request headers bounded in time and size, and
connections bounded on a listener beyond loopback."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from roundhouse.server.security import is_loopback

# A client gets this long to send a request's headers, from its connection (or the end of
# its previous request's reply) on; uvicorn itself waits for ever (slowloris).
HEADER_TIMEOUT_S = 10.0
# And this many bytes for them: httptools buffers a header line without limit.
MAX_HEADER_BYTES = 64 * 1024
# Open connections plus requests in progress on a listener beyond loopback; past it
# uvicorn answers 503. The gateway's own queue bounds the work behind them.
REMOTE_MAX_CONNECTIONS = 256
# Who may say, in X-Forwarded-For, which peer a request is for: a proxy on this machine
# alone (never taken from FORWARDED_ALLOW_IPS: the key check trusts the peer address).
TRUSTED_PROXIES = ["127.0.0.1", "::1"]


def _plain_reply(status: str, words: str) -> bytes:
    body = words.encode()
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


_TOO_SLOW = _plain_reply(
    "408 Request Timeout",
    f"The request's headers did not arrive within {HEADER_TIMEOUT_S:g} s; the connection is "
    "closed.",
)
_TOO_BIG = _plain_reply(
    "431 Request Header Fields Too Large",
    f"The request's headers are larger than {MAX_HEADER_BYTES // 1024} KiB; the connection "
    "is closed.",
)


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with a deadline and a size cap on each request's
    headers. The keep-alive timeout covers the wait between requests; this covers a request
    begun and never finished, and a connection opened and left silent."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Waiting for a request's headers (from the connection on, and from each request's
        # first byte); `_begun` once that request's first byte came.
        self._in_headers = True
        self._begun = False
        self._header_bytes = 0
        self._header_deadline: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        if self._header_deadline is None:
            self._header_deadline = self.loop.call_later(HEADER_TIMEOUT_S, self._headers_late)

    def _disarm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        # Bytes of a chunk that began inside a request's headers and did not end them; a
        # chunk that starts in one request's body and begins the next is not counted.
        counted = self._in_headers
        super().data_received(data)
        if not (counted and self._in_headers):
            return
        self._header_bytes += len(data)
        if self._header_bytes > MAX_HEADER_BYTES:
            self._refuse(_TOO_BIG)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_headers = self._begun = True
        self._arm()

    def on_headers_complete(self) -> None:
        self._in_headers = self._begun = False
        self._header_bytes = 0
        self._disarm()
        super().on_headers_complete()

    def _headers_late(self) -> None:
        self._header_deadline = None
        if self._in_headers:
            # A connection that never sent a byte is just closed, as browsers expect of an
            # idle preconnect; a request begun is told why.
            self._refuse(_TOO_SLOW if self._begun else None)

    def _refuse(self, reply: bytes | None) -> None:
        self._disarm()
        if self.transport.is_closing():
            return
        # Only between replies: a pipelined request must not cut into one being written.
        if reply is not None and (self.cycle is None or self.cycle.response_complete):
            self.transport.write(reply)
        self.transport.close()


def listener_config(app: Any, host: str, **options: Any) -> uvicorn.Config:
    """The uvicorn configuration of a listener of the daemon bound to `host`."""
    remote = not is_loopback(host)
    return uvicorn.Config(
        app,
        http=BoundedHttpProtocol,
        log_config=None,  # our rotating log file, not uvicorn's console handlers
        access_log=False,
        timeout_graceful_shutdown=5,
        lifespan="off",
        forwarded_allow_ips=TRUSTED_PROXIES,
        limit_concurrency=REMOTE_MAX_CONNECTIONS if remote else None,
        **options,
    )
