"""Schemas of paired machines: the pairing exchange between two daemons, the control API's
list, code and pairing requests, and what a peer tells about itself."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from roundhouse.api.gateway import GatewayModel
from roundhouse.api.hardware import HardwareInventory
from roundhouse.api.instances import InstanceInfo

# A pairing request carries two certificates' worth of text at most.
MAX_PAIR_BODY = 16 * 1024
# The peer listener's port unless the settings say another (peers.port).
DEFAULT_PEER_PORT = 11502


def parse_address(text: str) -> tuple[str, int]:
    """HOST, HOST:PORT or [IPv6]:PORT as a person types it; ValueError, in words, if not."""
    text = text.strip()
    if text.startswith("["):  # [fe80::1]:11502
        host, _, rest = text[1:].partition("]")
        port_text = rest.removeprefix(":")
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    if not host:
        raise ValueError("Give the other machine's address, e.g. 192.168.1.20 or box.local:11502.")
    if not port_text:
        return host, DEFAULT_PEER_PORT
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"{port_text!r} is not a port: give HOST or HOST:PORT.")
    return host, int(port_text)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PairRequest(_Frozen):
    """`POST /peer/v1/pair` from the machine the code was typed on (the initiator)."""

    name: str = Field(min_length=1, max_length=200, description="the initiator's machine name")
    port: int = Field(ge=0, le=65535, description="its peer listener's port; 0: not listening")
    cert_pem: str = Field(min_length=1, max_length=8192)
    key: str = Field(
        min_length=32, max_length=200, description="the key the responder will call it with"
    )
    proof: str = Field(min_length=64, max_length=64)


class PairReply(_Frozen):
    """The responder's answer: its own key for the initiator, and its proof."""

    name: str = Field(min_length=1, max_length=200)
    key: str = Field(min_length=32, max_length=200)
    proof: str = Field(min_length=64, max_length=64)
    version: str = ""


class PeerInfo(_Frozen):
    """A paired machine, as the control API lists it."""

    id: str
    name: str
    host: str
    port: int
    fingerprint: str
    paired_at: float = Field(description="seconds since the Unix epoch")
    reachable: bool | None = Field(
        default=None, description="whether it answered just now; None: not asked"
    )
    error: str | None = Field(default=None, description="why it did not answer, in words")
    version: str | None = None


class PeerList(_Frozen):
    peers: list[PeerInfo]
    listener: PeerListenerStatus


class PeerListenerStatus(_Frozen):
    """This daemon's peer listener: where it listens, or why not."""

    url: str | None = Field(default=None, description="https://host:port; None: off")
    fingerprint: str
    error: str | None = None
    discovery: str | None = Field(
        default=None,
        description="mDNS (peers.discovery): 'advertised', or why not, in words; None: off",
    )


class PairingCodeReply(_Frozen):
    """`POST /api/v1/peers/code`: a code to type on the other machine."""

    code: str = Field(description="shown as XXXXX-XXXXX")
    expires_at: float
    host: str | None = Field(default=None, description="the peer listener's address")
    addresses: list[str] = Field(default=[], description="this machine's addresses to try")
    port: int
    fingerprint: str
    listening: bool
    error: str | None = Field(default=None, description="why the listener is not listening")


class PairWith(_Frozen):
    """`POST /api/v1/peers`: pair with the machine at host:port that shows `code`."""

    host: str = Field(min_length=1, max_length=253)
    port: int = Field(default=11502, ge=1, le=65535)
    code: str = Field(min_length=10, max_length=40)


class PeerMove(_Frozen):
    """`PATCH /api/v1/peers/{id}`: the paired machine is now at host:port (its certificate
    must be the one pinned)."""

    host: str = Field(min_length=1, max_length=253)
    port: int = Field(default=11502, ge=1, le=65535)


class Unpaired(_Frozen):
    """`DELETE /api/v1/peers/{id}`: removed here; whether the other side was told."""

    id: str
    told_peer: bool
    message: str


class PeerLoad(_Frozen):
    """Requests on one of the peer's instances now."""

    instance: str
    in_flight: int
    queued: int


class PeerState(_Frozen):
    """`GET /peer/v1/state`: what a peer tells a paired machine about itself."""

    name: str
    version: str
    fingerprint: str
    hardware: HardwareInventory | None = None
    instances: list[InstanceInfo] = []
    load: list[PeerLoad] = []
    startable: list[str] = Field(default=[], description="models it can start by name")
    listed: list[GatewayModel] = Field(
        default=[],
        description="what its gateway lists, by the ids its instances serve under (its own "
        "machine's only)",
    )


class PeerStart(_Frozen):
    """`POST /peer/v1/instances`: start `model` as the peer's gateway would for a request."""

    model: str = Field(min_length=1, max_length=300)


class PeerStopped(_Frozen):
    instance: str
    stopped: bool


class PeerSeen(_Frozen):
    """What a paired machine last told about itself through its change feed, or why it
    could not be asked (this daemon follows each one; see core/peers/watch.py)."""

    id: str
    state: PeerState | None = Field(default=None, description="None: not heard from (yet)")
    error: str | None = Field(default=None, description="why it could not be asked, in words")


class PeersView(_Frozen):
    """`GET /api/v1/peers/machines` and the change feed's `peers` event: the paired
    machines (each one's `reachable` as last seen, not asked now), this daemon's listener,
    and what each machine last told."""

    peers: list[PeerInfo]
    listener: PeerListenerStatus
    seen: list[PeerSeen]


class DiscoveredPeer(_Frozen):
    """A daemon that answered on the LAN (mDNS); trusted for nothing until paired."""

    name: str
    addresses: list[str]
    port: int
    fingerprint: str
    version: str = ""
    paired: bool = Field(description="whether this machine is paired with it already")


class DiscoveredList(_Frozen):
    found: list[DiscoveredPeer]


PeerList.model_rebuild()
