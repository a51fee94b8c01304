"""This daemon's HTTP client to one paired daemon: TLS pinned to its certificate, our key as
the bearer, bounded reads, and failures said in words (refused, wrong certificate, key
refused). Also the initiator's side of pairing."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import ssl
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from roundhouse.api.instances import InstanceInfo
from roundhouse.api.metrics import MetricsHistory
from roundhouse.api.peers import PairReply, PairRequest, PeerStart, PeerState, PeerStopped
from roundhouse.core.errors import RoundhouseError
from roundhouse.core.peers import pairing
from roundhouse.core.peers.store import Peer, key_hash, peer_id
from roundhouse.core.peers.tls import (
    Identity,
    der_to_pem,
    fingerprint_of,
    first_contact_context,
    pinned_context,
)

PEER_PREFIX = "/peer/v1"
# A peer's answers are small JSON documents; a larger one is refused, not buffered.
MAX_REPLY_BYTES = 8 * 1024 * 1024
CONNECT_TIMEOUT_S = 5.0
_M = TypeVar("_M", bound=BaseModel)
READ_TIMEOUT_S = 30.0


class PeerError(RoundhouseError):
    """A paired machine could not be asked: the message says why and what to do."""

    title = "Paired machine unavailable"
    status = 502


class PeerUnreachableError(PeerError):
    title = "Paired machine unreachable"
    status = 503


class PeerCertificateError(PeerError):
    title = "Wrong certificate"


class PeerKeyRefusedError(PeerError):
    title = "Key refused"


def _where(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _ssl_cause(exc: BaseException) -> ssl.SSLError | None:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _transport_error(exc: Exception, where: str, name: str) -> PeerError:
    """Words for a failure to reach a peer at all."""
    bad_cert = _ssl_cause(exc)
    if isinstance(bad_cert, ssl.SSLCertVerificationError):
        return PeerCertificateError(
            f"The machine at {where} presented a different certificate than {name} did when "
            "you paired: it is not that machine, or its identity was made anew. Nothing was "
            "sent. If it was reinstalled, remove the peer and pair again."
        )
    if bad_cert is not None:
        return PeerError(f"TLS with {name} at {where} failed ({bad_cert.reason or bad_cert}).")
    if isinstance(exc, httpx.TimeoutException):
        return PeerUnreachableError(
            f"{name} at {where} did not answer in time. Check that it is on and its daemon runs."
        )
    return PeerUnreachableError(
        f"{name} at {where} refused the connection or cannot be reached. Check that its daemon "
        "runs with the peer listener on (settings peers.listen_host) and that the address is "
        "right."
    )


class PeerClient:
    """Calls one peer's /peer/v1 routes; `async with` closes it."""

    def __init__(self, peer: Peer, key: str) -> None:
        self.peer = peer
        self.where = _where(peer.host, peer.port)
        self.base_url = f"https://{self.where}"
        self._client = httpx.AsyncClient(
            base_url=self.base_url,
            verify=pinned_context(peer.cert_pem),
            headers={"authorization": f"Bearer {key}"},
            timeout=httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
            trust_env=False,
        )

    async def __aenter__(self) -> PeerClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    @contextlib.asynccontextmanager
    async def stream(self, method: str, path: str, **kwargs: Any) -> AsyncIterator[httpx.Response]:
        """A response as it comes (for the change feed); errors as `request` says them."""
        try:
            async with self._client.stream(method, path, **kwargs) as response:
                await self._check(response)
                yield response
        except httpx.TransportError as exc:
            raise _transport_error(exc, self.where, self.peer.name) from exc

    async def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON a peer answers `method path` with, read to MAX_REPLY_BYTES at most."""
        async with self.stream(method, path, **kwargs) as response:
            body = await _bounded(response, self.peer.name)
        if not body:
            return None
        try:
            return json.loads(body)
        except ValueError as exc:
            raise PeerError(f"{self.peer.name} answered something that is not JSON.") from exc

    async def _check(self, response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        detail = await _detail(response)
        name = self.peer.name
        if response.status_code == 401:
            raise PeerKeyRefusedError(
                f"{name} refused this machine's key: it may have unpaired this machine. "
                "Remove it here and pair again."
            )
        error = PeerError(f"{name} answered {response.status_code}: {detail}")
        error.status = response.status_code if response.status_code < 500 else 502
        raise error

    async def state(self) -> PeerState:
        return _parse(PeerState, await self.request("GET", f"{PEER_PREFIX}/state"), self.peer)

    async def start(self, model: str) -> InstanceInfo:
        body = PeerStart(model=model).model_dump()
        reply = await self.request("POST", f"{PEER_PREFIX}/instances", json=body)
        return _parse(InstanceInfo, reply, self.peer)

    async def stop(self, instance: str) -> PeerStopped:
        reply = await self.request("DELETE", f"{PEER_PREFIX}/instances/{instance}")
        return _parse(PeerStopped, reply, self.peer)

    async def metrics(self, instance: str, window_s: float) -> MetricsHistory:
        """One of the peer's instances' figures over the last `window_s` seconds."""
        reply = await self.request(
            "GET", f"{PEER_PREFIX}/metrics/{instance}", params={"window": window_s}
        )
        return _parse(MetricsHistory, reply, self.peer)

    async def unpair(self) -> None:
        """Tell the peer to forget this machine."""
        await self.request("DELETE", f"{PEER_PREFIX}/pair")


async def _bounded(response: httpx.Response, name: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise PeerError(f"{name} answered more than {MAX_REPLY_BYTES} bytes; refused.")
        chunks.append(chunk)
    return b"".join(chunks)


async def _detail(response: httpx.Response) -> str:
    try:
        body = await _bounded(response, "the peer")
        answer = json.loads(body)
        if isinstance(answer, dict) and isinstance(answer.get("detail"), str):
            return str(answer["detail"])
    except (PeerError, ValueError, httpx.HTTPError):
        pass
    return response.reason_phrase or "an error"


def _parse(model: type[_M], data: Any, peer: Peer) -> _M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise PeerError(
            f"{peer.name} answered in a form this version does not read ({exc.error_count()} "
            "problems): update Roundhouse on both machines to the same version."
        ) from exc


@dataclass(frozen=True)
class Paired:
    """The result of pairing from this side: the peer to keep and the key to call it with."""

    peer: Peer
    outbound_key: str
    version: str


async def presented_certificate(host: str, port: int) -> str:
    """The certificate (PEM) the listener at host:port presents; trusted for nothing yet."""
    where = _where(host, port)
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=first_contact_context()),
            CONNECT_TIMEOUT_S,
        )
    except (OSError, TimeoutError, ssl.SSLError) as exc:
        if isinstance(exc, ssl.SSLError):
            raise PeerError(
                f"{where} does not speak TLS as a Roundhouse peer listener does. Check the port "
                "(the one `roundhouse peers code` shows there)."
            ) from exc
        raise PeerUnreachableError(
            f"Nothing answers at {where}. Check the address and port that `roundhouse peers "
            "code` shows on the other machine, and that its peer listener is on."
        ) from exc
    try:
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    finally:
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()
    if not der:
        raise PeerError(f"{where} presented no certificate.")
    return der_to_pem(der)


async def request_pairing(
    host: str, port: int, code: str, identity: Identity, name: str, listen_port: int
) -> Paired:
    """Pair with the daemon at host:port that shows `code`: its certificate is taken from the
    TLS handshake, the request goes on a connection pinned to it, and its proof is checked."""
    where = _where(host, port)
    cert_pem = await presented_certificate(host, port)
    their_fp = fingerprint_of(cert_pem)
    our_key = secrets.token_urlsafe(32)  # the key the peer will call us with
    proof_key = await asyncio.to_thread(pairing.code_key, code, their_fp)
    signed = pairing.transcript(their_fp, identity.fingerprint, key_hash(our_key))
    body = PairRequest(
        name=name,
        port=listen_port,
        cert_pem=identity.cert_pem,
        key=our_key,
        proof=pairing.proof(proof_key, signed, pairing.INITIATOR),
    )
    try:
        async with httpx.AsyncClient(
            verify=pinned_context(cert_pem),
            timeout=httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
            trust_env=False,
        ) as client:
            response = await client.post(
                f"https://{where}{PEER_PREFIX}/pair", json=body.model_dump()
            )
    except httpx.TransportError as exc:
        raise _transport_error(exc, where, "The other machine") from exc
    if response.status_code >= 400:
        detail = await _detail(response)
        error = pairing.PairingRefusedError(detail)
        if response.status_code == 429:
            error.status = 429
        raise error
    try:
        reply = PairReply.model_validate(response.json())
    except (ValueError, ValidationError) as exc:
        raise PeerError(
            f"{where} answered the pairing in a form this version does not read."
        ) from exc
    full = pairing.transcript(
        their_fp, identity.fingerprint, key_hash(our_key), key_hash(reply.key)
    )
    if not pairing.proof_ok(proof_key, full, pairing.RESPONDER, reply.proof):
        raise pairing.PairingRefusedError(
            f"The machine at {where} did not prove it knows the code: it may not be the machine "
            "that showed it. Nothing was kept. Open a new code there and try again."
        )
    peer = Peer(
        id=peer_id(their_fp),
        name=reply.name,
        host=host,
        port=port,
        cert_pem=cert_pem,
        fingerprint=their_fp,
        paired_at=time.time(),
        inbound_key_sha256=key_hash(our_key),
    )
    return Paired(peer, reply.key, reply.version)
