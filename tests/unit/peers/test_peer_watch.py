"""A paired machine's state as this gateway routes to it: its own ready and loading instances
under the ids its gateway lists, reached through its gateway; never a third machine's."""

from __future__ import annotations

from roundhouse.api.engines import EngineId
from roundhouse.api.gateway import GatewayModel, ModelState
from roundhouse.api.instances import InstanceOrigin, InstanceStatus
from roundhouse.api.peers import PeerState
from roundhouse.core.peers.store import Peer
from roundhouse.core.peers.watch import as_routed, peer_url
from tests.unit.builders import ready_instance

PEER = Peer(
    id="3f1a09c277d0",
    name="gpu-box",
    host="192.168.1.20",
    port=11502,
    cert_pem="",
    fingerprint="3f1a09c277d0" + "0" * 52,
    paired_at=0.0,
    inbound_key_sha256="",
)


def _model(model_id: str, instance: str | None, state: ModelState) -> GatewayModel:
    return GatewayModel(id=model_id, engine=EngineId.LLAMA_CPP, state=state, instance=instance)


def test_its_instances_are_named_by_its_gateway_and_reached_through_it() -> None:
    serving = ready_instance("a1", model="/m/qwen3.gguf", models=["/m/qwen3.gguf"], port=8001)
    loading = ready_instance("b2", model="/m/big.gguf", port=8002).model_copy(
        update={"status": InstanceStatus.LOADING}
    )
    third = ready_instance("c3", origin=InstanceOrigin.PEER, machine="elsewhere")
    state = PeerState(
        name="gpu-box",
        version="1",
        fingerprint=PEER.fingerprint,
        instances=[serving, loading, third],
        listed=[
            _model("qwen3", "a1", ModelState.SERVING),
            _model("big", "b2", ModelState.LOADING),
            _model("elsewhere/x", "c3", ModelState.SERVING),
            _model("small", None, ModelState.STARTABLE),
        ],
    )
    routed = as_routed(PEER, state)
    assert [(i.id, i.models, i.status) for i in routed] == [
        ("3f1a09c277d0:a1", ["qwen3"], InstanceStatus.READY),
        ("3f1a09c277d0:b2", ["big"], InstanceStatus.LOADING),
    ]
    first = routed[0]
    assert first.origin == InstanceOrigin.PEER and first.machine == PEER.id
    assert first.name == "gpu-box" and first.pid is None and first.argv == []
    assert first.base_url == "https://192.168.1.20:11502/v1"


def test_an_ipv6_address_is_bracketed() -> None:
    moved = Peer(**{**PEER.__dict__, "host": "fe80::1"})
    assert peer_url(moved) == "https://[fe80::1]:11502"
