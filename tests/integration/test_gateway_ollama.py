"""Ollama's API on the gateway, with the official `ollama` client, through a real daemon and
the real llama-server: list, show, ps, chat and generate streamed and not (every stream ends
with `done: true` and the engine's own counts), embed and embeddings, an unknown model."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import ollama
import pytest

from roundhouse.api.instances import InstanceInfo
from roundhouse.client import DaemonClient
from tests.daemon_process import DaemonProcess, path_with
from tests.support.serving import llama_cpp, serving

READY_TIMEOUT_S = 60.0
MESSAGES = [{"role": "user", "content": "Say hello."}]


@dataclass
class Served:
    daemon: DaemonProcess
    instance: InstanceInfo
    embedder: InstanceInfo
    client: ollama.Client


@pytest.fixture(scope="module")
def served(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("gateway-ollama") / "home"
    # The context budget applies where the engine stops at its context.
    chat = llama_cpp(tiny_gguf, ctx_size=512, parallel=2, extra_args=("--no-context-shift",))
    # A file of its own: one named like the chat's would serve `tiny` too, and a request
    # too long for the chat's context would go there (the gateway's failover).
    embed_file = root.parent / "tiny-embed.gguf"
    shutil.copy(tiny_gguf, embed_file)
    embed = llama_cpp(
        embed_file,
        ctx_size=512,
        served_name="tiny-embed",
        # The tiny model declares no pooling; OpenAI-style embeddings need one.
        extra_args=("--embeddings", "--pooling", "mean"),
    )
    env = path_with(llama_server_binary)
    with serving(root, chat, embed, env=env, ready_timeout_s=READY_TIMEOUT_S) as (
        daemon,
        [info, embedder],
    ):
        client = ollama.Client(host=daemon.url, timeout=60)
        yield Served(daemon, info, embedder, client)


def _engine_usage(served: Served, body: dict[str, object]) -> dict[str, int]:
    """What the engine itself counts for the same request, asked straight."""
    reply = httpx.post(
        served.instance.base_url + "/chat/completions",
        json=body,
        headers=served.daemon.engine_headers(served.instance.id),
        timeout=60,
        trust_env=False,
    )
    reply.raise_for_status()
    usage: dict[str, int] = reply.json()["usage"]
    return usage


def test_version_list_show_and_ps(served: Served) -> None:
    assert httpx.get(served.daemon.url + "/api/version", trust_env=False).json()["version"]
    listed = {m.model: m for m in served.client.list().models}
    assert "tiny" in listed and "tiny-embed" in listed, listed
    tiny = listed["tiny"]
    assert tiny.details is not None and tiny.details.format == "gguf"
    assert tiny.details.family == "llama"
    assert tiny.size and tiny.modified_at is not None
    shown = served.client.show("tiny")
    assert shown.capabilities and "completion" in shown.capabilities
    assert shown.modelinfo and shown.modelinfo["general.architecture"] == "llama"
    assert served.client.show("tiny-embed").capabilities == ["embedding"]
    # Ollama's clients name models with a tag: ":latest" finds the one listed without.
    assert served.client.show("tiny:latest").details == shown.details
    running = {m.model for m in served.client.ps().models}
    assert {"tiny", "tiny-embed"} <= running


def test_chat_whole_has_ollama_fields_and_engine_counts(served: Served) -> None:
    reply = served.client.chat(
        model="tiny:latest",
        messages=MESSAGES,
        options={"num_predict": 6, "temperature": 0, "seed": 1},
    )
    assert reply.done is True and reply.done_reason in ("stop", "length")
    assert reply.message.role == "assistant" and reply.message.content
    engine = _engine_usage(
        served,
        {"messages": MESSAGES, "max_tokens": 6, "temperature": 0, "seed": 1},
    )
    assert reply.prompt_eval_count == engine["prompt_tokens"]
    assert reply.eval_count == engine["completion_tokens"]
    assert reply.total_duration and reply.eval_duration and reply.created_at


def test_chat_streamed_ends_with_done_and_counts(served: Served) -> None:
    parts = list(
        served.client.chat(
            model="tiny",
            messages=MESSAGES,
            stream=True,
            options={"num_predict": 6, "temperature": 0},
        )
    )
    assert parts and all(p.done is False for p in parts[:-1])
    last = parts[-1]
    assert last.done is True and last.done_reason in ("stop", "length")
    text = "".join(p.message.content or "" for p in parts)
    engine = _engine_usage(served, {"messages": MESSAGES, "max_tokens": 6, "temperature": 0})
    assert last.prompt_eval_count == engine["prompt_tokens"]
    assert last.eval_count == engine["completion_tokens"]
    assert text


def test_stream_is_ndjson(served: Served) -> None:
    """No `stream` field: Ollama streams by default, one JSON object a line."""
    with httpx.stream(
        "POST",
        served.daemon.url + "/api/chat",
        json={"model": "tiny", "messages": MESSAGES, "options": {"num_predict": 4}},
        timeout=60,
        trust_env=False,
    ) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in reply.iter_lines() if line]
    assert lines[-1]["done"] is True and "eval_count" in lines[-1]


def test_generate_whole_and_streamed(served: Served) -> None:
    whole = served.client.generate(
        model="tiny", prompt="Once upon", system="Tell stories.", options={"num_predict": 5}
    )
    assert whole.done is True and whole.response and whole.eval_count
    parts = list(
        served.client.generate(
            model="tiny", prompt="Once upon", stream=True, options={"num_predict": 5}
        )
    )
    assert parts[-1].done is True and parts[-1].eval_count and parts[-1].prompt_eval_count
    raw = served.client.generate(
        model="tiny", prompt="Once upon", raw=True, options={"num_predict": 3}
    )
    assert raw.done is True and raw.eval_count


def test_load_only_requests_answer_load(served: Served) -> None:
    reply = served.client.generate(model="tiny")
    assert reply.done is True and reply.done_reason == "load"


def test_embed_and_embeddings(served: Served) -> None:
    reply = served.client.embed(model="tiny-embed", input=["hello", "world"])
    assert len(reply.embeddings) == 2 and len(reply.embeddings[0]) > 0
    assert reply.embeddings[0] != reply.embeddings[1]
    assert reply.prompt_eval_count
    old = served.client.embeddings(model="tiny-embed", prompt="hello")
    assert list(old.embedding) == pytest.approx(list(reply.embeddings[0]), abs=1e-5)


def test_unknown_model_in_ollamas_error_shape(served: Served) -> None:
    with pytest.raises(ollama.ResponseError) as caught:
        served.client.chat(model="no-such-model", messages=MESSAGES, stream=False)
    assert caught.value.status_code == 404
    assert "no-such-model" in caught.value.error
    with pytest.raises(ollama.ResponseError) as shown:
        served.client.show("no-such-model")
    assert shown.value.status_code == 404
    reply = httpx.post(
        served.daemon.url + "/api/chat",
        json={"model": "no-such-model", "messages": MESSAGES},
        trust_env=False,
    )
    assert reply.status_code == 404 and isinstance(reply.json()["error"], str)


def test_refused_field_is_said_in_words(served: Served) -> None:
    reply = httpx.post(
        served.daemon.url + "/api/generate",
        json={"model": "tiny", "prompt": "a", "suffix": "b", "stream": False},
        trust_env=False,
    )
    assert reply.status_code == 400 and "suffix" in reply.json()["error"]


def test_options_the_engine_cannot_take_are_named(served: Served) -> None:
    reply = httpx.post(
        served.daemon.url + "/api/chat",
        json={
            "model": "tiny",
            "messages": MESSAGES,
            "stream": False,
            "keep_alive": "5m",
            "options": {"num_ctx": 8192, "num_predict": 2},
        },
        trust_env=False,
    )
    assert reply.status_code == 200, reply.text
    dropped = reply.headers["x-roundhouse-dropped-fields"]
    assert "options.num_ctx" in dropped and "keep_alive" in dropped
    assert reply.headers["x-roundhouse-path"] == "translated"


def test_usage_counted_per_api(served: Served) -> None:
    async def usage() -> dict[str, int]:
        async with DaemonClient(served.daemon.url, served.daemon.token) as client:
            status = await client.gateway_status()
        return next(u.by_api for u in status.usage if u.instance == served.instance.id)

    assert asyncio.run(usage()).get("ollama/translated", 0) > 0


def test_the_context_budget_in_ollamas_shape(served: Served) -> None:
    """More than the instance's context asked for: refused before the engine, in words that
    name both numbers, in Ollama's error shape."""
    with pytest.raises(ollama.ResponseError) as caught:
        served.client.chat(model="tiny", messages=MESSAGES, options={"num_predict": 4000})
    assert caught.value.status_code == 400
    assert "4000" in caught.value.error and "context" in caught.value.error
    with pytest.raises(ollama.ResponseError) as streamed:
        list(
            served.client.generate(
                model="tiny", prompt="hi", stream=True, options={"num_predict": 4000}
            )
        )
    assert streamed.value.status_code == 400
