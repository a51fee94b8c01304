"""The peers' core: the identity and its pin over real TLS, pairing codes and proofs (a man in
the middle fails), and the store of paired machines."""

from __future__ import annotations

import asyncio
import ssl
import stat
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest

from roundhouse.core.peers import discovery, pairing
from roundhouse.core.peers.client import (
    PeerCertificateError,
    PeerClient,
    PeerUnreachableError,
    presented_certificate,
)
from roundhouse.core.peers.store import Peer, PeerStore, key_hash, peer_id
from roundhouse.core.peers.tls import (
    Identity,
    fingerprint_of,
    load_or_create_identity,
    pinned_context,
    server_context,
)
from tests.fakes.keyring_backend import FileKeyring


@pytest.fixture
def file_keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("ROUNDHOUSE_TEST_KEYRING", str(tmp_path / "keyring.json"))
    before = keyring.get_keyring()
    keyring.set_keyring(FileKeyring())
    yield
    keyring.set_keyring(before)


def test_identity_is_made_once_with_a_private_key(tmp_path: Path) -> None:
    first = load_or_create_identity(tmp_path, "box")
    assert stat.S_IMODE(first.key_path.stat().st_mode) == 0o600
    assert first.fingerprint == fingerprint_of(first.cert_pem)
    assert len(first.fingerprint) == 64
    assert load_or_create_identity(tmp_path, "box") == first
    other = load_or_create_identity(tmp_path / "other", "box")
    assert other.fingerprint != first.fingerprint


async def _serve(identity: Identity) -> tuple[asyncio.Server, int]:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server_context(identity))
    return server, server.sockets[0].getsockname()[1]


def _peer(identity: Identity, port: int) -> Peer:
    return Peer(
        id=peer_id(identity.fingerprint),
        name="box",
        host="127.0.0.1",
        port=port,
        cert_pem=identity.cert_pem,
        fingerprint=identity.fingerprint,
        paired_at=0.0,
        inbound_key_sha256=key_hash("k" * 40),
    )


def test_the_pin_accepts_its_certificate_and_refuses_another(tmp_path: Path) -> None:
    asyncio.run(_pin_accepts_and_refuses(tmp_path))


async def _pin_accepts_and_refuses(tmp_path: Path) -> None:
    real = load_or_create_identity(tmp_path / "a", "a")
    impostor = load_or_create_identity(tmp_path / "c", "c")
    server, port = await _serve(real)
    async with server:
        seen = await presented_certificate("127.0.0.1", port)
        assert fingerprint_of(seen) == real.fingerprint
        async with PeerClient(_peer(real, port), "key") as client:
            assert await client.request("GET", "/peer/v1/state") == {}
        async with PeerClient(_peer(impostor, port), "key") as client:
            with pytest.raises(PeerCertificateError, match="different certificate"):
                await client.request("GET", "/peer/v1/state")
    async with PeerClient(_peer(real, port), "key") as client:
        with pytest.raises(PeerUnreachableError, match="refused the connection"):
            await client.request("GET", "/peer/v1/state")


def test_pinned_context_trusts_nothing_else(tmp_path: Path) -> None:
    context = pinned_context(load_or_create_identity(tmp_path, "a").cert_pem)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert len(context.get_ca_certs()) == 1


def test_codes_are_canonical_and_forgiving_when_typed() -> None:
    code = pairing.new_code()
    assert len(code) == pairing.CODE_LENGTH
    assert set(code) <= set(pairing.ALPHABET)
    assert pairing.normalize_code("abcil-o0 xyz") == "ABC1100XYZ"


def _initiator_proof(code: str, responder_fp: str, initiator_fp: str) -> tuple[bytes, str]:
    signed = pairing.transcript(responder_fp, initiator_fp, key_hash("x" * 40))
    return signed, pairing.proof(pairing.code_key(code, responder_fp), signed, pairing.INITIATOR)


def test_a_right_proof_uses_the_code_up() -> None:
    codes = pairing.PairingCodes()
    offer = codes.open()
    signed, proof = _initiator_proof(offer.shown.lower(), "aa" * 32, "bb" * 32)
    codes.accept("aa" * 32, signed, proof)
    with pytest.raises(pairing.PairingRefusedError, match="No pairing code is open"):
        codes.accept("aa" * 32, signed, proof)  # the replay


def test_a_man_in_the_middle_fails_the_proof() -> None:
    codes = pairing.PairingCodes()
    offer = codes.open()
    # The initiator signed what it saw: the middle man's certificate, not the responder's.
    _, proof = _initiator_proof(offer.code, "ee" * 32, "bb" * 32)
    with pytest.raises(pairing.PairingRefusedError, match="Wrong pairing code"):
        codes.accept("aa" * 32, pairing.transcript("aa" * 32, "bb" * 32, key_hash("x" * 40)), proof)
    assert codes.current() == offer


def test_wrong_tries_void_the_code_and_it_expires() -> None:
    now = [1000.0]
    codes = pairing.PairingCodes(clock=lambda: now[0])
    offer = codes.open()
    for _ in range(pairing.MAX_WRONG - 1):
        with pytest.raises(pairing.PairingRefusedError, match="Wrong pairing code"):
            codes.accept("aa" * 32, b"t", "0" * 64)
    with pytest.raises(pairing.PairingRefusedError, match="too many times"):
        codes.accept("aa" * 32, b"t", "0" * 64)
    signed, proof = _initiator_proof(offer.code, "aa" * 32, "bb" * 32)
    with pytest.raises(pairing.PairingRefusedError, match="No pairing code"):
        codes.accept("aa" * 32, signed, proof)
    offer = codes.open()
    now[0] += pairing.VALID_S
    assert codes.current() is None


def test_the_store_keeps_peers_and_checks_keys(tmp_path: Path, file_keyring: None) -> None:
    identity = load_or_create_identity(tmp_path / "a", "a")
    store = PeerStore(tmp_path / "config")
    peer = _peer(identity, 11502)
    store.add(peer, "outbound-key")
    assert store.check_inbound("k" * 40) == peer
    assert store.check_inbound("k" * 39) is None
    assert store.check_inbound("") is None
    again = PeerStore(tmp_path / "config")
    assert again.list() == [peer]
    assert again.outbound_key(peer.id) == "outbound-key"
    assert "outbound-key" not in again.path.read_text()
    assert again.remove(peer.id) == peer
    assert again.outbound_key(peer.id) is None
    assert PeerStore(tmp_path / "config").list() == []


def test_the_mdns_record_says_where_and_who_and_reads_back() -> None:
    # Built and read without a network: tests never start zeroconf (it multicasts).
    fingerprint = "ab" * 32
    info = discovery.service_info("box one", 11502, fingerprint, "1.2.3", ["192.168.1.20"])
    assert info.type == discovery.SERVICE_TYPE
    assert info.name.startswith("box one abababab.")
    found = discovery.found_from(info)
    assert found == discovery.Found(
        name="box one",
        addresses=("192.168.1.20",),
        port=11502,
        fingerprint=fingerprint,
        version="1.2.3",
    )
    stranger = discovery.service_info("x", 1, "not-a-fingerprint", "", ["192.168.1.21"])
    assert discovery.found_from(stranger) is None
