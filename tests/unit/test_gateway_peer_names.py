"""A paired machine's models: listed by their own ids when unique, as `machine/id` when this
machine (or another) lists the id too; routed to by either name with the machine's own id
sent on; every client API passed through to the machine's gateway."""

from __future__ import annotations

from roundhouse.api.engines import EngineId
from roundhouse.api.gateway import ModelState
from roundhouse.api.instances import InstanceOrigin
from roundhouse.core.gateway.library import Startable
from roundhouse.core.gateway.listing import list_models
from roundhouse.core.gateway.native import NativeApis
from roundhouse.core.gateway.router import route
from tests.unit.builders import ready_instance


def _peer(instance_id: str, *models: str, name: str = "gpu-box") -> object:
    return ready_instance(
        instance_id,
        origin=InstanceOrigin.PEER,
        model=models[0],
        models=list(models),
        machine=f"id-{name}",
        name=name,
        port=9443,
    )


def _ids(instances: list) -> list[str]:
    return [entry.model.id for entry in list_models(instances, [], lambda _: False)]


def test_a_unique_peer_model_keeps_its_id() -> None:
    local = ready_instance("a", model="/models/tiny.gguf", models=["/models/tiny.gguf"])
    assert _ids([local, _peer("gpu-box:1", "qwen3")]) == ["tiny", "qwen3"]


def test_a_name_served_here_too_is_listed_with_the_machine_in_front() -> None:
    local = ready_instance("a", model="/models/tiny.gguf", models=["/models/tiny.gguf"])
    # Peers come after this machine's instances whatever the order given.
    found = _ids([_peer("gpu-box:1", "tiny"), _peer("mac:1", "tiny", name="mac"), local])
    assert found == ["tiny", "gpu-box/tiny", "mac/tiny"]


def test_the_machine_name_pins_the_route_and_the_machine_hears_its_own_id() -> None:
    local = ready_instance("a", model="/models/tiny.gguf", models=["/models/tiny.gguf"])
    peer = _peer("gpu-box:1", "tiny", "embed")
    pinned = route([local, peer], "gpu-box/tiny")
    assert pinned.instance.id == "gpu-box:1"
    assert pinned.upstream_model == "tiny"
    assert route([local, peer], "embed").upstream_model == "embed"
    # The plain id goes to this machine first (its own instances are preferred).
    assert route([local, peer], "tiny").instance.id == "a"


def test_every_client_api_passes_through_to_a_peer() -> None:
    native = NativeApis()
    peer = _peer("gpu-box:1", "tiny")
    assert native.path(peer, "anthropic") == "messages"
    assert native.path(peer, "responses") == "responses"
    # OpenAI's own paths are the request's path already; nothing to translate.
    assert native.path(peer, "openai") is None


def test_a_name_this_machine_can_start_stays_its_own() -> None:
    here = Startable(
        id="tiny",
        engine=EngineId.LLAMA_CPP,
        model="/models/tiny.gguf",
        preset=None,
        names=frozenset({"tiny", "tiny.gguf"}),
    )
    found = list_models([_peer("gpu-box:1", "tiny", "qwen3")], [here], lambda _: False)
    assert [(e.model.id, e.model.state) for e in found] == [
        ("gpu-box/tiny", ModelState.SERVING),
        ("qwen3", ModelState.SERVING),
        ("tiny", ModelState.STARTABLE),
    ]
