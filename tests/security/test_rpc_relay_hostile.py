"""The relay in front of a lent rpc-server (ADR 40) with real certificates on loopback: the paired
machine through its own relay gets through; a plain TCP client, a TLS client without a
certificate, one with a third daemon's certificate, and the right certificate from another
source address reach nothing behind it."""

from __future__ import annotations

import asyncio
import socket
import ssl
import sys
from pathlib import Path

import pytest

from roundhouse.core.peers.tls import Identity, load_or_create_identity, pinned_context
from roundhouse.core.peers.tunnel import head_context, head_relay, lender_relay

MESSAGE = b"rpc hello\n"


class Upstream:
    """What stands for rpc-server: an echo server that counts its connections."""

    def __init__(self) -> None:
        self.connections = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._echo, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _echo(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        while data := await reader.read(1024):
            writer.write(data)
            await writer.drain()
        writer.close()

    def close(self) -> None:
        if self._server is not None:
            self._server.close()


def identities(tmp_path: Path) -> tuple[Identity, Identity, Identity]:
    return (
        load_or_create_identity(tmp_path / "alpha", "alpha"),
        load_or_create_identity(tmp_path / "beta", "beta"),
        load_or_create_identity(tmp_path / "mallory", "mallory"),
    )


async def answer_of(
    port: int,
    context: ssl.SSLContext | None = None,
    local_host: str | None = None,
) -> bytes:
    """Send MESSAGE to 127.0.0.1:`port` and read what comes back until the end (or a TLS
    refusal, which also counts as nothing)."""
    try:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1",
            port,
            ssl=context,
            server_hostname="" if context else None,
            local_addr=(local_host, 0) if local_host else None,
        )
    except (OSError, ssl.SSLError):
        return b""
    got = b""
    try:
        writer.write(MESSAGE)
        await writer.drain()
        got = await asyncio.wait_for(reader.read(1024), 10)
    except (OSError, ssl.SSLError, TimeoutError):
        pass
    finally:
        writer.close()
    return got


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_only_the_paired_machine_gets_through_the_relay(tmp_path: Path, loop: str) -> None:
    alpha, beta, mallory = identities(tmp_path)

    async def main() -> None:
        upstream = Upstream()
        await upstream.start()
        # alpha lends to beta, which connects from 127.0.0.1.
        relay = lender_relay(alpha, beta.cert_pem, "127.0.0.1", upstream.port, "test")
        port = await relay.listen("127.0.0.1")
        head = head_relay(beta, alpha.cert_pem, "127.0.0.1", port, "test head")
        head_port = await head.listen("127.0.0.1")
        try:
            # The paired machine, through its loopback relay: the bytes go through.
            assert await answer_of(head_port) == MESSAGE
            assert upstream.connections == 1

            # A plain TCP client: the handshake fails, nothing is carried.
            assert MESSAGE not in await answer_of(port)
            # TLS trusting alpha, without a client certificate.
            assert await answer_of(port, pinned_context(alpha.cert_pem)) == b""
            # TLS with a third daemon's certificate.
            assert await answer_of(port, head_context(mallory, alpha.cert_pem)) == b""
            # The paired machine's own certificate is no use to a client trusting another
            # server either: beta's relay refuses a lender that is not alpha.
            wrong_lender = head_relay(beta, mallory.cert_pem, "127.0.0.1", port, "wrong")
            wrong_port = await wrong_lender.listen("127.0.0.1")
            assert await answer_of(wrong_port) == b""
            await wrong_lender.close()
            if sys.platform.startswith("linux"):
                # Beta's certificate from an address that is not the paired machine's.
                stolen = head_context(beta, alpha.cert_pem)
                assert await answer_of(port, stolen, local_host="127.0.0.2") == b""
            assert upstream.connections == 1
            assert relay.stats.refused >= 3
        finally:
            await head.close()
            await relay.close()
            upstream.close()
        # Closed: nothing listens on the relay's port any more.
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
            pass

    if loop == "uvloop":
        # The daemon's own loop (server/event_loop.py), where TLS on a stream differs.
        uvloop = pytest.importorskip("uvloop")
        uvloop.run(main())
    else:
        asyncio.run(main())
