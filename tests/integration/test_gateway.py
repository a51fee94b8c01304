"""The OpenAI-compatible gateway at /v1 through a real daemon and the real llama-server, with
the official `openai` client: models, chat and completions, streaming with and without usage,
an unknown model, a foreign Host."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
import pytest
from openai import OpenAI

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import InstanceInfo, StartRequest
from roundhouse.client import DaemonClient
from tests.daemon_process import DaemonProcess, path_with, start_ready
from tests.support.serving import llama_cpp, serving

READY_TIMEOUT_S = 60.0
MESSAGES: list[openai.types.chat.ChatCompletionMessageParam] = [
    {"role": "user", "content": "Say hello."}
]


@dataclass
class Served:
    daemon: DaemonProcess
    instance: InstanceInfo
    model: str
    client: OpenAI


@pytest.fixture(scope="module")
def served(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("gateway") / "home"
    request = llama_cpp(tiny_gguf, ctx_size=512, parallel=2)
    env = path_with(llama_server_binary)
    with serving(root, request, env=env, ready_timeout_s=READY_TIMEOUT_S) as (daemon, [info]):
        assert info.models, info
        client = OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        yield Served(daemon, info, info.models[0], client)
        client.close()


def test_models_lists_what_the_instance_serves(served: Served) -> None:
    models = {m.id: m for m in served.client.models.list()}
    # Started on a file: listed by the file's stem, never its path (which still routes).
    assert "tiny" in models and served.model not in models, models
    listed = models["tiny"]
    assert listed.owned_by == "llama.cpp"
    extra = listed.model_extra or {}
    assert extra["roundhouse"]["instance"] == served.instance.id
    assert extra["roundhouse"]["model"] == served.model


def test_chat_without_streaming_returns_content_and_usage(served: Served) -> None:
    reply = served.client.chat.completions.create(
        model=served.model, messages=MESSAGES, max_tokens=8
    )
    assert reply.choices[0].message.content
    assert reply.usage is not None and reply.usage.completion_tokens > 0


def test_the_instance_is_also_known_by_its_file_name(served: Served, tiny_gguf: Path) -> None:
    reply = served.client.chat.completions.create(
        model=tiny_gguf.name, messages=MESSAGES, max_tokens=4
    )
    assert reply.choices[0].message.content is not None


def test_stream_without_usage_sends_no_usage_chunk(served: Served) -> None:
    chunks = list(
        served.client.chat.completions.create(
            model=served.model, messages=MESSAGES, max_tokens=8, stream=True
        )
    )
    assert len(chunks) > 1
    assert all(c.choices for c in chunks), "a usage-only chunk reached a client not asking"
    assert "".join(c.choices[0].delta.content or "" for c in chunks)


def test_stream_with_usage_ends_with_the_usage_chunk(served: Served) -> None:
    chunks = list(
        served.client.chat.completions.create(
            model=served.model,
            messages=MESSAGES,
            max_tokens=8,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    last = chunks[-1]
    assert last.choices == []
    assert last.usage is not None and last.usage.completion_tokens > 0
    assert all(c.choices for c in chunks[:-1])


def test_completions_with_and_without_streaming(served: Served) -> None:
    reply = served.client.completions.create(model=served.model, prompt="Once upon", max_tokens=6)
    assert reply.choices[0].text
    streamed = list(
        served.client.completions.create(
            model=served.model, prompt="Once upon", max_tokens=6, stream=True
        )
    )
    assert "".join(c.choices[0].text for c in streamed if c.choices)
    assert all(c.choices for c in streamed)


def test_unknown_model_is_not_found_in_openai_shape(served: Served) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        served.client.chat.completions.create(model="no-such-model", messages=MESSAGES)
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["code"] == "model_not_found"
    # It offers the models by the names a client would send: the stem, not the path.
    assert "'tiny'" in body["message"] and served.model not in body["message"]


def test_a_request_without_a_model_is_refused(served: Served) -> None:
    reply = httpx.post(
        served.daemon.url + "/v1/chat/completions",
        json={"messages": MESSAGES},
        trust_env=False,
    )
    assert reply.status_code == 400
    assert reply.json()["error"]["type"] == "invalid_request_error"


def test_a_foreign_host_is_refused(served: Served) -> None:
    for method, path in (("GET", "/v1/models"), ("POST", "/v1/chat/completions")):
        reply = httpx.request(
            method,
            served.daemon.url + path,
            headers={"Host": "evil.example"},
            json={"model": served.model, "messages": MESSAGES},
            trust_env=False,
        )
        assert reply.status_code == 403, (path, reply.text)


def test_embeddings_route_to_an_embedding_instance(served: Served, tiny_gguf: Path) -> None:
    """A second instance, started for embeddings under its own name, answers /v1/embeddings
    through the same address while the chat instance keeps answering chat."""

    request = StartRequest(
        engine=EngineId.LLAMA_CPP,
        options=InstanceOptions(
            model=str(tiny_gguf),
            ctx_size=512,
            served_name="tiny-embed",
            # The tiny model declares no pooling; OpenAI-style embeddings need one.
            extra_args=("--embeddings", "--pooling", "mean"),
        ),
    )
    embedder = asyncio.run(start_ready(served.daemon, request, READY_TIMEOUT_S))
    try:
        reply = served.client.embeddings.create(model="tiny-embed", input=["hello", "world"])
        assert len(reply.data) == 2
        assert len(reply.data[0].embedding) > 0
        assert reply.data[0].embedding != reply.data[1].embedding
        chat = served.client.chat.completions.create(
            model=served.model, messages=MESSAGES, max_tokens=4
        )
        assert chat.choices[0].message.content is not None
    finally:

        async def stop() -> None:
            async with DaemonClient(served.daemon.url, served.daemon.token) as client:
                await client.stop_instance(embedder.id)

        asyncio.run(stop())
