"""An engine Roundhouse did not start never takes a preset's model unless the user allowed it:
the router and the listing, the consent kept per engine and URL, the words that mark such
engines unprotected, and how the CLI shows them."""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path

import pytest
from rich.console import Console

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.external import AttachSource, ExternalEngine
from roundhouse.api.gateway import ModelState
from roundhouse.api.instances import (
    InstanceInfo,
    InstanceList,
    InstanceOrigin,
    InstanceStatus,
    Preset,
)
from roundhouse.cli.instances_view import instances_view
from roundhouse.core.engines.attach import LeftOut, RunningEngines
from roundhouse.core.errors import ConflictError
from roundhouse.core.gateway.errors import ModelNotFound
from roundhouse.core.gateway.library import Startable, find, from_presets
from roundhouse.core.gateway.listing import list_models
from roundhouse.core.gateway.router import route, serving
from roundhouse.core.instances.endpoints import (
    PRESET_ROUTES_FILE,
    EndpointStore,
    PresetRoute,
)
from roundhouse.core.instances.entries import InstanceEntry, InstanceTable
from roundhouse.core.instances.exposure import entry_warnings, unprotected_words
from roundhouse.core.instances.external import ExternalInstances
from tests.unit.builders import ready_instance

TINY = "org/tiny-chat"


def _external(instance_id: str = "x1", *, allowed: bool = False, **extra: object) -> InstanceInfo:
    return ready_instance(
        instance_id,
        engine=EngineId.VLLM,
        model=TINY,
        origin=InstanceOrigin.EXTERNAL,
        port=9000,
        models=[TINY, "other-model"],
        may_serve_presets=allowed,
        **extra,
    )


def _ours() -> InstanceInfo:
    return ready_instance(
        "ours", engine=EngineId.VLLM, model=TINY, models=[TINY], options=InstanceOptions(model=TINY)
    )


class Presets:
    """`is_preset` as the gateway asks it, counting the questions."""

    def __init__(self, *names: str) -> None:
        self.names = set(names)
        self.asked: list[str] = []

    def __call__(self, model: str) -> bool:
        self.asked.append(model)
        return model in self.names


def test_a_presets_model_is_not_routed_to_an_engine_roundhouse_did_not_start() -> None:
    presets = Presets(TINY)
    with pytest.raises(ModelNotFound) as refused:
        route([_external()], TINY, presets)
    # With just-in-time starts off this is the answer: it says how to let the engine serve.
    assert "instance x1 at http://127.0.0.1:9000, which Roundhouse did not start" in str(
        refused.value
    )
    assert "`roundhouse engines allow-presets x1`" in str(refused.value)
    with pytest.raises(ModelNotFound) as unknown:
        route([_external()], "nothing", presets)
    assert "allow-presets" not in str(unknown.value)
    # Its other models are its own to serve.
    assert route([_external()], "other-model", presets).instance.id == "x1"
    # Allowed by the user: it serves the preset's model too.
    assert route([_external(allowed=True)], TINY, presets).instance.id == "x1"
    # An instance Roundhouse runs serves it whatever the external one does.
    assert route([_external(), _ours()], TINY, presets).instance.id == "ours"


def test_the_presets_are_read_only_when_an_external_engine_lists_the_name() -> None:
    presets = Presets(TINY)
    assert route([_ours()], TINY, presets).instance.id == "ours"
    assert presets.asked == []
    assert [i.id for i in serving([_ours(), _external()], TINY, presets)] == ["ours"]
    assert presets.asked == [TINY]


def _startables() -> list[Startable]:
    options = InstanceOptions(model=TINY)
    return from_presets([Preset(engine=EngineId.VLLM, model=TINY, options=options)])


def test_the_listing_leaves_a_presets_name_to_the_preset() -> None:
    startables = _startables()
    assert find(startables, TINY) is not None
    listed = {e.model.id: e for e in list_models([_external()], startables, lambda _: False)}
    assert listed[TINY].model.state == ModelState.STARTABLE
    assert listed[TINY].instance is None and listed[TINY].model.preset == "default"
    assert listed["other-model"].model.instance == "x1"

    allowed = list_models([_external(allowed=True)], startables, lambda _: False)
    by_id = {e.model.id: e for e in allowed}
    assert by_id[TINY].model.state == ModelState.SERVING and by_id[TINY].model.instance == "x1"


def test_the_consent_is_kept_per_engine_and_url(tmp_path: Path) -> None:
    store = EndpointStore(tmp_path)
    route_ = PresetRoute(engine=EngineId.VLLM, url="http://127.0.0.1:9000")
    assert store.preset_routes() == frozenset()
    store.allow_presets(route_, True)
    store.allow_presets(route_, True)
    assert store.preset_routes() == {route_}
    # Another engine on that port is not the one the user allowed.
    other = PresetRoute(engine=EngineId.LLAMA_CPP, url="http://127.0.0.1:9000")
    assert other not in EndpointStore(tmp_path).preset_routes()
    store.allow_presets(route_, False)
    assert store.preset_routes() == frozenset()


def test_an_unreadable_consent_file_allows_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / PRESET_ROUTES_FILE).write_text('[{"engine": "vllm", "url": 3}')
    assert EndpointStore(tmp_path).preset_routes() == frozenset()
    assert "until allowed again" in caplog.text


def _entry(**fields: object) -> InstanceEntry:
    values: dict[str, object] = {
        "id": "x1",
        "engine": EngineId.LLAMA_CPP,
        "origin": InstanceOrigin.EXTERNAL,
        "status": InstanceStatus.READY,
        "host": "127.0.0.1",
        "port": 8080,
        "base_url": "http://127.0.0.1:8080",
        "started_at": time.time(),
    }
    values.update(fields)
    return InstanceEntry(**values)  # type: ignore[arg-type]


def test_what_an_engine_roundhouse_did_not_start_leaves_open_in_words() -> None:
    assert unprotected_words(_entry(origin=InstanceOrigin.STARTED)) is None
    assert unprotected_words(_entry(origin=InstanceOrigin.ADOPTED)) is None
    local = unprotected_words(_entry())
    assert local is not None and local.startswith("Not protected by Roundhouse: any program")
    assert "a web page, if it sends CORS headers" in local
    assert "Start the model from Roundhouse instead, or put a key on it" in local
    remote = unprotected_words(_entry(host="192.168.1.9", base_url="http://192.168.1.9:1234"))
    assert remote is not None and "whoever can reach 192.168.1.9" in remote
    keyed = unprotected_words(_entry(needs_api_key=True))
    assert keyed is not None and "only its own API key guards it" in keyed


def test_a_key_kept_for_a_plain_http_remote_endpoint_warns() -> None:
    endpoint = {"found_by": AttachSource.USER_ENDPOINT, "has_key": True}
    remote = _entry(host="192.168.1.9", base_url="http://192.168.1.9:1234", **endpoint)
    (warning,) = entry_warnings(remote)
    assert warning.startswith("Its API key travels in clear text: http://192.168.1.9:1234")
    assert "https://" in warning and "SSH tunnel" in warning
    assert entry_warnings(_entry(base_url="https://box.example:443", **endpoint)) == []
    assert entry_warnings(_entry(**endpoint)) == []  # loopback
    no_key = {"found_by": AttachSource.USER_ENDPOINT, "has_key": False}
    assert entry_warnings(_entry(base_url="http://192.168.1.9:1234", **no_key)) == []


def _render(answer: InstanceList) -> str:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(instances_view(answer, width=200))
    return out.getvalue()


def test_ps_marks_external_engines_unprotected_and_says_what_to_do() -> None:
    words = "Not protected by Roundhouse: any program on this machine can use it."
    warning = "Its API key travels in clear text: http://192.168.1.9:1 is plain http://."
    answer = InstanceList(
        instances=[
            _ours(),
            _external(unprotected=words),
            _external("x2", allowed=True, unprotected=words, warnings=[warning]),
        ],
        left_out=["vllm (pid 7 on port 8000) is not used: it listens on 0.0.0.0:8000."],
    )
    text = _render(answer)
    assert "external unprotected" in text and "serves presets" in text
    assert f"Unprotected (x1, x2): {words}" in text
    assert "roundhouse engines allow-presets ID" in text
    assert f"Warning (x2): {warning}" in text
    assert "Left out: vllm (pid 7 on port 8000) is not used" in text
    assert "started" in text

    nothing = _render(InstanceList(instances=[], left_out=answer.left_out))
    assert "No instances." in nothing and "Left out: vllm" in nothing


def test_allowing_presets_is_kept_across_scans_and_only_for_engines_not_ours(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    found = ExternalEngine(
        engine=EngineId.LLAMA_CPP,
        base_url="http://127.0.0.1:8080",
        found_by=AttachSource.PROCESS_SCAN,
        healthy=True,
        model_ids=[TINY],
    )
    left = LeftOut(EngineId.VLLM, 7, (8000,), "it runs as another user (bob)")

    async def scanner(_: frozenset[int]) -> RunningEngines:
        return RunningEngines([found], [left])

    async def main() -> None:
        table = InstanceTable()
        table.entries["ours"] = _entry(id="ours", origin=InstanceOrigin.STARTED)
        external = ExternalInstances(table, endpoints=EndpointStore(tmp_path), scanner=scanner)
        (info,) = await external.scan()
        assert not info.may_serve_presets and info.unprotected is not None
        assert external.left_out == [str(left)]
        with pytest.raises(ConflictError) as refused:
            await external.allow_presets("ours", True)
        assert "serves preset models anyway" in refused.value.detail
        assert (await external.allow_presets(info.id, True)).may_serve_presets
        (again,) = await external.scan()
        assert again.may_serve_presets, "the user's choice outlives a scan"
        assert not (await external.allow_presets(info.id, False)).may_serve_presets
        (last,) = await external.scan()
        assert not last.may_serve_presets

    with caplog.at_level("INFO"):
        asyncio.run(main())
    assert caplog.text.count("is not used: it runs as another user (bob)") == 1
    assert EndpointStore(tmp_path).preset_routes() == frozenset()
