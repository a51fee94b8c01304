"""The gateway's routing by model name and its event relay, without a server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceInfo, InstanceOrigin, InstanceStatus
from roundhouse.core.gateway.router import ModelNotFound, ModelNotReady, listed, route
from roundhouse.core.gateway.sse import relay
from roundhouse.core.gateway.upstream import is_loopback


def _info(
    id: str,
    engine: EngineId = EngineId.LLAMA_CPP,
    models: tuple[str, ...] = ("m",),
    origin: InstanceOrigin = InstanceOrigin.STARTED,
    status: InstanceStatus = InstanceStatus.READY,
    model: str | None = None,
    served_name: str | None = None,
) -> InstanceInfo:
    return InstanceInfo(
        id=id,
        engine=engine,
        model=model,
        origin=origin,
        status=status,
        host="127.0.0.1",
        port=1,
        url="http://127.0.0.1:1",
        base_url="http://127.0.0.1:1/v1",
        started_at=0.0,
        models=list(models),
        options=InstanceOptions(model=model, served_name=served_name),
    )


def test_started_instances_win_over_external_ones() -> None:
    external = _info("ext", origin=InstanceOrigin.EXTERNAL)
    started = _info("ours")
    assert route([external, started], "m").instance.id == "ours"
    assert listed([external, started])["m"].id == "ours"


def test_a_path_or_file_name_routes_and_the_engine_gets_its_own_id() -> None:
    info = _info("a", models=("tiny",), model="/models/tiny q4.gguf", served_name="alias")
    for name in ("/models/tiny q4.gguf", "tiny q4.gguf", "tiny q4", "alias"):
        assert route([info], name).upstream_model == "tiny"
    assert route([info], "tiny").upstream_model == "tiny"


def test_ollama_routes_by_its_tags() -> None:
    ollama = _info("o", engine=EngineId.OLLAMA, models=("llama3:latest", "qwen3:0.6b"))
    assert route([ollama], "qwen3:0.6b").instance.id == "o"
    assert route([ollama], "llama3").upstream_model == "llama3"
    with pytest.raises(ModelNotFound):
        route([ollama], "qwen3")


def test_unknown_names_what_is_available_and_loading_is_not_ready() -> None:
    with pytest.raises(ModelNotFound, match="'m'"):
        route([_info("a")], "other")
    with pytest.raises(ModelNotReady, match="loading"):
        route([_info("a", status=InstanceStatus.LOADING)], "m")


def test_loopback_is_recognised() -> None:
    assert is_loopback("http://127.0.0.1:8080/v1") and is_loopback("http://[::1]:1/v1")
    assert is_loopback("http://localhost:1") and not is_loopback("https://example.com/v1")


async def _chunks(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def _relay(parts: list[bytes], forward_usage: bool) -> tuple[bytes, list[Any]]:
    seen: list[Any] = []

    async def run() -> bytes:
        out = [
            e
            async for e in relay(_chunks(parts), forward_usage=forward_usage, on_usage=seen.append)
        ]
        return b"".join(out)

    return asyncio.run(run()), seen


STREAM = (
    b'data: {"choices":[{"delta":{"content":"hi"}}],"usage":null}\n\n'
    b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\r\n\r\n'
    b"data: [DONE]\n\n"
)


def test_relay_drops_the_usage_chunk_only_when_not_asked_and_counts_it_always() -> None:
    # Split at every byte: events still come out whole and unchanged.
    parts = [STREAM[i : i + 1] for i in range(len(STREAM))]
    kept, seen = _relay(parts, forward_usage=True)
    assert kept == STREAM
    assert seen == [{"prompt_tokens": 3, "completion_tokens": 1}]
    dropped, seen = _relay(parts, forward_usage=False)
    assert b"prompt_tokens" not in dropped and b"[DONE]" in dropped and b'"hi"' in dropped
    assert seen == [{"prompt_tokens": 3, "completion_tokens": 1}]
