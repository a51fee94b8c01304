"""The gateway's client to the engines against small local servers: the one resend on a
kept-alive connection closed unanswered, a bounded send, closing a reply cut short, and
certificates checked for endpoints elsewhere."""

from __future__ import annotations

import asyncio
import datetime
import socket
import ssl
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import cast

import aiohttp
import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceInfo, InstanceOrigin, InstanceStatus
from roundhouse.core.gateway import gateway as gateway_module
from roundhouse.core.gateway.errors import UpstreamFailed
from roundhouse.core.gateway.gateway import Gateway
from roundhouse.core.gateway.router import Route
from roundhouse.core.gateway.upstream import Upstream
from roundhouse.core.instances.service import InstanceService

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
OK = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"


def _route(url: str) -> Route:
    info = InstanceInfo(
        id="e",
        engine=EngineId.LLAMA_CPP,
        model=None,
        origin=InstanceOrigin.STARTED,
        status=InstanceStatus.READY,
        host="127.0.0.1",
        port=1,
        url=url,
        base_url=f"{url}/v1",
        started_at=0.0,
        models=["m"],
        options=InstanceOptions(),
    )
    return Route(info, "m")


async def _request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One request's head and body."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.lower().split(b"\r\n")
        if line.startswith(b"content-length:")
    )
    return head, await reader.readexactly(length)


async def _serve(handler: Handler) -> tuple[asyncio.Server, str]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}"


class _Keys:
    """The one thing forwarding asks of the instances: the key an engine was started with."""

    async def upstream_key(self, instance_id: str) -> str | None:
        return f"rhe-key-of-{instance_id}"


def _gateway() -> Gateway:
    # Only forwarding is used: no instances but their keys, no library.
    return Gateway(cast(InstanceService, _Keys()), library=list)


def test_a_connection_closed_unanswered_is_sent_once_more_as_it_was() -> None:
    seen: list[tuple[bytes, bytes]] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await _request(reader))
        if len(seen) > 1:  # the first connection ends unanswered, as a stale one does
            writer.write(OK)
            await writer.drain()
        writer.close()

    async def main() -> None:
        server, url = await _serve(handler)
        gateway = _gateway()
        try:
            reply = await gateway.open(_route(url), "chat/completions", b'{"a": 1}', stream=False)
            assert reply.status_code == 200 and reply.is_success
            assert reply.headers["Content-Type"] == "application/json"
            assert await reply.aread() == b"{}"
            reply.close()
        finally:
            await gateway.aclose()
            server.close()
        assert len(seen) == 2
        for head, body in seen:
            assert head.startswith(b"POST /v1/chat/completions HTTP/1.1")
            assert b"accept-encoding: identity" in head.lower()
            # The instance's own key goes with every request, the one sent again included.
            assert b"authorization: bearer rhe-key-of-e\r\n" in head.lower()
            assert body == b'{"a": 1}'

    asyncio.run(main())


def test_an_engine_that_is_gone_fails_in_words() -> None:
    async def main() -> None:
        server, url = await _serve(lambda _r, _w: asyncio.sleep(0))
        server.close()
        await server.wait_closed()
        gateway = _gateway()
        try:
            with pytest.raises(UpstreamFailed, match="did not answer: ClientConnectorError"):
                await gateway.open(_route(url), "completions", b"{}", stream=False)
        finally:
            await gateway.aclose()

    asyncio.run(main())


def test_a_send_the_engine_never_reads_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gateway_module, "HEADERS_TIMEOUT_S", 0.5)

    async def handler(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)  # never reads
        writer.close()

    async def main() -> None:
        server, url = await _serve(handler)
        gateway = _gateway()
        try:
            # More than the socket buffers hold: the send stalls.
            with pytest.raises(UpstreamFailed, match=r"took more than 0\.5 s"):
                await gateway.open(_route(url), "completions", b"x" * 64_000_000, stream=False)
        finally:
            await gateway.aclose()
            server.close()

    asyncio.run(main())


def test_a_reply_cut_short_closes_its_connection_and_a_whole_one_is_reused() -> None:
    connections: list[asyncio.Event] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ended = asyncio.Event()
        connections.append(ended)
        head, _ = await _request(reader)
        if b"/v1/whole" in head:
            writer.write(OK)
            await writer.drain()
            head, _ = await _request(reader)  # the next request comes on this connection
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        writer.write(b"5\r\nchunk\r\n")
        await writer.drain()
        assert await reader.read() == b""  # the client closed the connection
        ended.set()
        writer.close()

    async def main() -> None:
        server, url = await _serve(handler)
        gateway = _gateway()
        try:
            whole = await gateway.open(_route(url), "whole", b"{}", stream=False)
            assert await whole.aread() == b"{}"
            whole.close()
            cut = await gateway.open(_route(url), "stream", b"{}", stream=True)
            assert await anext(aiter(cut.aiter_raw())) == b"chunk"
            cut.close()
            await asyncio.wait_for(connections[0].wait(), 2)
        finally:
            await gateway.aclose()
            server.close()
        assert len(connections) == 1

    asyncio.run(main())


def test_an_engine_that_ends_its_connection_after_a_stream_is_not_reused_after_one() -> None:
    """As llama-server (cpp-httplib) does: it says keep-alive, then closes the connection
    after each streamed reply. Once a request on such a connection had to be sent again, a
    streamed reply's connection is closed by the gateway, not pooled for the next request."""
    answered = 0
    unanswered = 0  # requests sent on a connection after its stream, which the server ends

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal answered, unanswered
        await _request(reader)
        answered += 1
        writer.write(b"HTTP/1.1 200 OK\r\nkeep-alive: timeout=5, max=100\r\n")
        writer.write(b"transfer-encoding: chunked\r\n\r\n5\r\nchunk\r\n0\r\n\r\n")
        await writer.drain()
        # The close comes a moment after the reply's end; a request sent meanwhile is lost.
        try:
            got = await asyncio.wait_for(reader.read(1), 0.05)
            if got:
                unanswered += 1
        except TimeoutError:
            pass
        writer.close()

    async def stream(gateway: Gateway, url: str) -> None:
        reply = await gateway.open(_route(url), "chat/completions", b"{}", stream=True)
        assert b"".join([chunk async for chunk in reply.aiter_raw()]) == b"chunk"
        reply.close()

    async def main() -> None:
        server, url = await _serve(handler)
        gateway = _gateway()
        try:
            await stream(gateway, url)
            await stream(gateway, url)  # on the pooled connection: closed under it, resent
            assert not gateway.upstream.keeps_after_stream(_route(url).instance)
            for _ in range(3):
                await stream(gateway, url)  # each on a new connection, none sent twice
        finally:
            await gateway.aclose()
            server.close()
        # Only the second request was sent on a connection the server was ending.
        assert (answered, unanswered) == (5, 1)

    asyncio.run(main())


def _self_signed(folder: Path) -> ssl.SSLContext:
    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "engine.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    return context


def test_an_endpoint_elsewhere_has_its_certificate_checked(tmp_path: Path) -> None:
    context = _self_signed(tmp_path)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(OK)
        await writer.drain()
        writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=context)
        port = server.sockets[0].getsockname()[1]
        upstream = Upstream()
        remote = upstream.client_for(_route("https://engine.example").instance)
        local = upstream.client_for(_route("http://127.0.0.1:1").instance)
        assert remote is not local
        try:
            # The session for endpoints elsewhere refuses a certificate nobody vouches for.
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await remote.post(f"https://127.0.0.1:{port}/v1/x", data=b"{}")
        finally:
            await upstream.aclose()
            server.close()

    asyncio.run(main())


def test_a_resend_goes_on_a_new_connection_never_another_stale_one() -> None:
    """Three kept-alive connections in the pool, each closed unanswered when it is used
    again (as llama-server does at its keep-alive's end): every request still succeeds,
    its resend on a connection of its own, never on another of the stale ones."""
    kept = 3
    # Per request: the connection (its number) it came on, and whether it was answered.
    seen: list[tuple[int, bool]] = []
    first_round = asyncio.Event()
    opened = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal opened
        opened += 1
        number = opened
        answered = 0
        while True:
            try:
                await _request(reader)
            except asyncio.IncompleteReadError:
                break
            if answered and number <= kept:  # a pooled connection used again: stale
                seen.append((number, False))
                break
            seen.append((number, True))
            if number <= kept and opened < kept:
                await first_round.wait()  # all three are open at once, then pooled
            first_round.set()
            writer.write(OK)
            await writer.drain()
            answered += 1
        writer.close()

    async def main() -> None:
        server, url = await _serve(handler)
        gateway = _gateway()
        try:
            replies = await asyncio.gather(
                *(gateway.open(_route(url), "first", b"{}", stream=False) for _ in range(kept))
            )
            for reply in replies:
                assert await reply.aread() == b"{}"
                reply.close()
            for _ in range(kept):
                reply = await gateway.open(_route(url), "again", b"{}", stream=False)
                assert await reply.aread() == b"{}"
                reply.close()
        finally:
            await gateway.aclose()
            server.close()
        stale = [number for number, answered in seen if not answered]
        resent_on = [number for number, answered in seen[kept:] if answered]
        assert sorted(stale) == [1, 2, 3]  # each pooled connection failed once
        # Each resend came on a connection opened for it, none on a pooled one.
        assert len(resent_on) == kept and all(number > kept for number in resent_on)
        assert len(set(resent_on)) == kept

    asyncio.run(main())


def test_a_request_is_resent_once_and_no_more() -> None:
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append((await _request(reader))[1])
        writer.close()  # never answers

    async def main() -> None:
        server, url = await _serve(handler)
        gateway = _gateway()
        try:
            with pytest.raises(UpstreamFailed, match="did not answer: ServerDisconnectedError"):
                await gateway.open(_route(url), "completions", b'{"n": 1}', stream=False)
        finally:
            await gateway.aclose()
            server.close()
        assert seen == [b'{"n": 1}', b'{"n": 1}']

    asyncio.run(main())


@pytest.mark.parametrize(
    "partial",
    [b"HTTP/1.1 500 Internal Server Error\r\ncontent-", b"HTTP/1.1 4"],
    ids=["headers-cut", "status-line-cut"],
)
@pytest.mark.parametrize("reset", [False, True], ids=["closed", "reset"])
def test_a_request_the_engine_began_to_answer_is_never_sent_twice(
    partial: bytes, reset: bool
) -> None:
    """The engine wrote part of a reply (an error, here) and the connection ended, closed
    or reset: whatever aiohttp calls that, the engine had the request, so it goes back to
    the client as a failure rather than being run a second time. On a kept-alive
    connection, where a resend would otherwise be due."""
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head, _ = await _request(reader)
        seen.append(head.split(b" ")[1])
        writer.write(OK)  # the first request on it: answered, and the connection pooled
        await writer.drain()
        head, _ = await _request(reader)
        seen.append(head.split(b" ")[1])
        writer.write(partial)
        await writer.drain()
        await asyncio.sleep(0.05)  # the partial reply is read before the connection ends
        if reset:
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        else:
            writer.close()

    async def main() -> None:
        server, url = await _serve(handler)
        gateway = _gateway()
        try:
            reply = await gateway.open(_route(url), "first", b"{}", stream=False)
            assert await reply.aread() == b"{}"
            reply.close()
            with pytest.raises(UpstreamFailed, match="did not answer"):
                await gateway.open(_route(url), "answered", b"{}", stream=False)
        finally:
            await gateway.aclose()
            server.close()
        assert seen == [b"/v1/first", b"/v1/answered"]

    asyncio.run(main())
