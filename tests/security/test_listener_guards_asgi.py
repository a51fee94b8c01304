"""The listeners' guards as ASGI parts, with scopes no socket here can produce: peers beyond
loopback with a forged Host, mapped and zoned addresses, no peer at all; bodies counted as
they arrive; an engine's endless event line and oversize reply."""

from __future__ import annotations

import asyncio
import json
import time
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from starlette.types import Message, Receive, Scope, Send

from roundhouse.core.gateway.sse import MAX_EVENT_BYTES, relay
from roundhouse.core.gateway.upstream import ReplyTooLarge, UpstreamReply
from roundhouse.server.request_guard import BodyTooLarge, RequestGuard
from roundhouse.server.security import KeyGuard, peer_is_local

KEY = "rh-the-gateway-key-0123456789"
TOKEN = "the-daemon-token"


class Inner:
    """The route behind the guards: records what reached it, reads the body like FastAPI."""

    def __init__(self) -> None:
        self.calls = 0
        self.read = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.calls += 1
        more = True
        while more and scope["type"] == "http":
            message = await receive()
            self.read += len(message.get("body", b""))
            more = message.get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def scope_of(
    path: str = "/v1/models",
    method: str = "GET",
    client: tuple[str, int] | None = ("127.0.0.1", 50000),
    **headers: str,
) -> Scope:
    return {
        "type": "http",
        "method": method,
        "path": path,
        "client": client,
        "headers": [
            (k.replace("_", "-").encode(), v.encode("latin-1")) for k, v in headers.items()
        ],
    }


async def call(
    app: Any, scope: Scope, body: list[bytes] | None = None
) -> tuple[int, dict[str, Any] | None]:
    parts = list(body or [b""])
    sent: list[Message] = []

    async def receive() -> Message:
        chunk = parts.pop(0) if parts else b""
        return {"type": "http.request", "body": chunk, "more_body": bool(parts)}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    status = sent[0]["status"]
    raw = b"".join(m.get("body", b"") for m in sent[1:])
    return status, (json.loads(raw) if raw.startswith(b"{") else None)


def key_guard(inner: Inner, key: str | None, prefix: str | None = "/v1") -> KeyGuard:
    return KeyGuard(inner, key=lambda: key, also=lambda: TOKEN, prefix=prefix)


@pytest.mark.parametrize(
    ("client", "local"),
    [
        (("127.0.0.1", 1), True),
        (("127.8.9.10", 1), True),
        (("::1", 1), True),
        (("::ffff:127.0.0.1", 1), True),  # IPv4 on a dual-stack socket
        (("192.0.2.7", 1), False),
        (("::ffff:192.0.2.7", 1), False),
        (("fe80::1%eth0", 1), False),
        (("localhost", 0), False),  # a name (X-Forwarded-For) proves nothing
        (("testclient", 50000), False),
        (None, False),  # no peer known (a Unix socket): not trusted
    ],
)
def test_the_peer_address_decides_what_is_local(
    client: tuple[str, int] | None, local: bool
) -> None:
    assert peer_is_local(scope_of(client=client)) is local


@pytest.mark.parametrize("path", ["/v1/models", "/api/v1/status", "/docs", "/nope"])
def test_a_peer_beyond_loopback_forging_a_loopback_host_needs_a_key_that_is_not_set(
    path: str,
) -> None:
    inner = Inner()
    remote = ("192.0.2.7", 40000)
    for host in ("127.0.0.1", "localhost:11500", "[::1]:11500"):
        status, body = asyncio.run(
            call(key_guard(inner, None), scope_of(path, client=remote, host=host))
        )
        assert status == 401, (path, host)
        assert body is not None
        message = body["error"]["message"]
        assert "another machine (192.0.2.7)" in message
        assert "roundhouse gateway key --generate" in message
    # The daemon's token is the control credential: it opens the daemon's listener.
    auth = scope_of(path, client=remote, host="127.0.0.1", authorization=f"Bearer {TOKEN}")
    assert asyncio.run(call(key_guard(inner, None), auth))[0] == 200
    assert inner.calls == 1
    # From loopback, no key set: open as before, on every path.
    assert asyncio.run(call(key_guard(inner, None), scope_of(path)))[0] == 200


def test_a_peer_beyond_loopback_needs_the_key_on_every_path_once_set() -> None:
    inner = Inner()
    remote = ("192.0.2.7", 40000)
    for path in ("/v1/models", "/docs", "/api/v1/status"):
        assert asyncio.run(call(key_guard(inner, KEY), scope_of(path, client=remote)))[0] == 401
        wrong = scope_of(path, client=remote, x_api_key="rh-wrong-0123456789")
        assert asyncio.run(call(key_guard(inner, KEY), wrong))[0] == 401
        right = scope_of(path, client=remote, x_api_key=KEY)
        assert asyncio.run(call(key_guard(inner, KEY), right))[0] == 200
        # From loopback the key guards only the gateway's prefix.
        local = asyncio.run(call(key_guard(inner, KEY), scope_of(path)))[0]
        assert local == (401 if path.startswith("/v1") else 200)


def test_a_non_ascii_key_is_refused_not_an_error() -> None:
    inner = Inner()
    for scope in (scope_of(authorization="Bearer \xe9\xff"), scope_of(x_api_key="\xe9\xff")):
        status, body = asyncio.run(call(key_guard(inner, KEY), scope))
        assert status == 401 and body is not None
        assert body["error"]["code"] == "invalid_api_key"
    assert inner.calls == 0


def guard(inner: Inner, origins: tuple[str, ...] = (), limit: int = 1000) -> RequestGuard:
    return RequestGuard(
        inner,
        origins=lambda: origins,
        control_prefixes=("/api/v1",),
        gateway_body_limit=limit,
        control_body_limit=limit // 10,
    )


def test_a_body_sent_in_chunks_is_cut_off_at_the_cap_and_not_read_further() -> None:
    inner = Inner()
    chunks = [b"x" * 100] * 50  # 5000 bytes, no length said up front
    scope = scope_of(
        "/v1/chat/completions",
        "POST",
        content_type="application/json",
        transfer_encoding="chunked",
    )
    status, body = asyncio.run(call(guard(inner), scope, chunks))
    assert status == 413 and body is not None
    assert body["error"]["code"] == "request_too_large"
    # Read up to the first chunk past the cap, and no further.
    assert inner.read <= 1000


def test_a_route_that_answers_its_own_error_for_a_cut_body_is_answered_413() -> None:
    class Parsing(Inner):
        """FastAPI's body parsing turns an error in reading into its own 400."""

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            try:
                while (await receive()).get("more_body"):
                    pass
            except BodyTooLarge:
                await send({"type": "http.response.start", "status": 400, "headers": []})
                await send({"type": "http.response.body", "body": b'{"detail": "parsing"}'})

    scope = scope_of(
        "/api/v1/settings", "PUT", content_type="application/json", transfer_encoding="chunked"
    )
    status, body = asyncio.run(call(guard(Parsing()), scope, [b"x" * 60] * 5))
    assert status == 413 and body is not None
    assert "larger than the control API accepts" in body["detail"]


def test_an_origin_is_judged_case_and_slash_blind_and_the_listeners_own_page_passes() -> None:
    inner = Inner()
    listed = guard(inner, origins=("http://app.example:3000",))
    for origin, status in [
        ("http://APP.example:3000/", 200),
        ("http://app.example:3001", 403),
        ("null", 403),
        ("http://127.0.0.1:11500", 200),  # the daemon's own /docs page
        ("https://127.0.0.1:11500", 200),
        ("http://127.0.0.1:11501", 403),  # another port is another origin
    ]:
        scope = scope_of(origin=origin, host="127.0.0.1:11500")
        assert asyncio.run(call(listed, scope))[0] == status, origin
    # The control API answers its own page alone, never a listed one.
    control = scope_of("/api/v1/status", origin="http://app.example:3000", host="127.0.0.1:1")
    assert asyncio.run(call(listed, control))[0] == 403


def test_an_endless_event_line_is_cut_off_in_linear_time() -> None:
    chunk = b"data: " + b"x" * 4090  # 4 KiB reads, never a blank line
    reads = 0
    seen: list[Any] = []

    async def engine() -> AsyncIterator[bytes]:
        nonlocal reads
        while True:
            reads += 1
            yield chunk

    async def main() -> list[bytes]:
        return [e async for e in relay(engine(), forward_usage=True, on_usage=seen.append)]

    tracemalloc.start()
    started = time.process_time()
    out = asyncio.run(main())
    cpu = time.process_time() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(out) == 1 and b"upstream_event_too_large" in out[0], out
    assert out[0].startswith(b"data: {") and out[0].endswith(b"\n\n")
    # Stopped just past the cap, having held about one event's worth.
    assert reads * len(chunk) <= MAX_EVENT_BYTES + 2 * len(chunk)
    assert peak < 3 * MAX_EVENT_BYTES
    # A rescan of the whole buffer per read would be 4096 rescans of up to 16 MiB (minutes).
    assert cpu < 5.0, cpu
    assert seen == [None]


def test_events_split_anywhere_come_out_whole_however_long_they_grew() -> None:
    events = [b'data: {"n": %d, "pad": "%s"}\r\n\r\n' % (i, b"y" * (i * 997)) for i in range(40)]
    stream = b"".join(events)

    async def engine() -> AsyncIterator[bytes]:
        for i in range(0, len(stream), 1013):
            yield stream[i : i + 1013]

    async def main() -> bytes:
        out = [e async for e in relay(engine(), forward_usage=True, on_usage=lambda _: None)]
        return b"".join(out)

    assert asyncio.run(main()) == stream


REPLY_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"


def _engine_reply(head: bytes, body_chunks: int) -> Any:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(head)
        try:
            for _ in range(body_chunks):
                writer.write(b"%x\r\n%s\r\n" % (65536, b"z" * 65536))
                await writer.drain()
        except ConnectionError:
            pass  # the gateway stopped reading: what is tested
        writer.close()

    return handler


@pytest.mark.parametrize(
    "head",
    [
        REPLY_HEAD + b"content-length: 999999999999\r\n\r\n",
        REPLY_HEAD + b"transfer-encoding: chunked\r\n\r\n",
    ],
    ids=["declared", "chunked"],
)
def test_an_engines_oversize_reply_is_refused_when_read(head: bytes) -> None:
    async def main() -> None:
        server = await asyncio.start_server(_engine_reply(head, 64), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            async with aiohttp.ClientSession() as session:
                response = await session.get(f"http://127.0.0.1:{port}/")
                reply = UpstreamReply(response)
                with pytest.raises(ReplyTooLarge) as caught:
                    await reply.aread(limit=1024 * 1024)
                reply.close()
                assert caught.value.status == 502
                assert "larger than 1 MiB" in caught.value.message
        finally:
            server.close()

    asyncio.run(main())
