"""Anthropic's Messages API through a real daemon and the real llama-server, with the official
`anthropic` client: passed through to llama-server's own /v1/messages, and translated to its
chat completions when pass-through is off. Messages, streams (each checked event by event),
count_tokens, a tool round trip, system prompts, stop sequences, counts equal to the engine's
own, errors in Anthropic's shape, and the gateway's guards (key, Origin) on these routes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from anthropic import Anthropic

from roundhouse.api.instances import InstanceInfo
from tests.anthropic_stream import check_stream, parse_sse
from tests.daemon_process import DaemonProcess, path_with
from tests.support.serving import llama_cpp, serving
from tests.support.standins import keyring_env

READY_TIMEOUT_S = 60.0
CONTEXT = 512
PATH_HEADER = "x-roundhouse-path"
# The SDK no longer takes sampling arguments (current Claude models refuse them); local
# engines do, and greedy replies can be compared.
GREEDY = {"temperature": 0}
HELLO: list[anthropic.types.MessageParam] = [{"role": "user", "content": "Say hello."}]
WEATHER_TOOL: anthropic.types.ToolParam = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 8}},
        "required": ["city"],
    },
}


@dataclass
class Served:
    daemon: DaemonProcess
    instance: InstanceInfo
    model: str
    key: str
    client: Anthropic

    def control(self) -> httpx.Client:
        return self.daemon.control()

    def set_pass_through(self, on: bool) -> None:
        self.daemon.set_pass_through(on)

    def usage(self) -> dict[str, Any]:
        return self.daemon.gateway_usage(self.instance.id)

    def post(self, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
        headers = {"x-api-key": self.key, "anthropic-version": "2023-06-01", **headers}
        return httpx.post(
            self.daemon.url + path, json=body, headers=headers, trust_env=False, timeout=60
        )


@pytest.fixture(scope="module")
def served(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("gateway-anthropic")
    env = {**path_with(llama_server_binary), **keyring_env(folder)}
    request = llama_cpp(
        tiny_gguf,
        ctx_size=CONTEXT,
        parallel=1,
        served_name="tiny-chat",
        # Off, so that the context budget applies (llama.cpp's default from b6300).
        extra_args=("--no-context-shift",),
    )
    with serving(folder / "home", request, env=env, ready_timeout_s=READY_TIMEOUT_S) as (
        daemon,
        [info],
    ):
        headers = {"Authorization": f"Bearer {daemon.token}"}
        reply = httpx.post(daemon.url + "/api/v1/gateway/key", headers=headers, trust_env=False)
        assert reply.status_code == 200, reply.text
        key = reply.json()["key"]
        # api_key: the SDK sends it as x-api-key, as Claude Code does.
        client = Anthropic(base_url=daemon.url, api_key=key, max_retries=0, timeout=60)
        yield Served(daemon, info, info.models[0], key, client)
        client.close()


@pytest.fixture(params=["passthrough", "translated"])
def path(request: pytest.FixtureRequest, served: Served) -> Iterator[str]:
    """Each test runs passed through to llama-server's /v1/messages and translated to its
    chat completions."""
    served.set_pass_through(request.param == "passthrough")
    try:
        yield str(request.param)
    finally:
        served.set_pass_through(True)


def test_a_message_with_a_system_prompt(served: Served, path: str) -> None:
    raw = served.client.messages.with_raw_response.create(
        model=served.model,
        max_tokens=12,
        system=[{"type": "text", "text": "You are terse."}],
        messages=HELLO,
        extra_body=GREEDY,
    )
    assert raw.headers[PATH_HEADER] == path
    assert raw.headers["x-roundhouse-engine"] == "llama.cpp"
    message = raw.parse()
    assert message.type == "message" and message.role == "assistant"
    assert message.content and message.content[0].type == "text" and message.content[0].text
    assert message.stop_reason in ("end_turn", "max_tokens")
    assert message.usage.output_tokens > 0


def test_counts_equal_the_engines_own(served: Served, path: str) -> None:
    """The same conversation through chat completions straight at the engine: the same
    prompt tokens (input plus cache read) and, greedy, the same reply and output tokens."""
    system = "You are terse."
    message = served.client.messages.create(
        model=served.model, max_tokens=10, system=system, messages=HELLO, extra_body=GREEDY
    )
    url = served.instance.url.rstrip("/") + "/v1/chat/completions"
    engine = httpx.post(
        url,
        json={
            "messages": [{"role": "system", "content": system}, *HELLO],
            "max_tokens": 10,
            "temperature": 0,
        },
        headers=served.daemon.engine_headers(served.instance.id),
        trust_env=False,
        timeout=60,
    ).json()
    usage = message.usage
    assert (
        usage.input_tokens + (usage.cache_read_input_tokens or 0)
        == (engine["usage"]["prompt_tokens"])
    )
    assert usage.output_tokens == engine["usage"]["completion_tokens"]
    assert message.content[0].type == "text"
    assert message.content[0].text == engine["choices"][0]["message"]["content"]
    counted = served.client.messages.count_tokens(model=served.model, system=system, messages=HELLO)
    assert counted.input_tokens == engine["usage"]["prompt_tokens"]


def test_a_stream_is_a_valid_sequence_and_rebuilds_the_message(served: Served, path: str) -> None:
    body = {"model": served.model, "max_tokens": 12, "messages": HELLO, "extra_body": GREEDY}
    whole = served.client.messages.create(**body)  # type: ignore[arg-type]
    raw = {**body, **GREEDY, "stream": True}
    del raw["extra_body"]
    reply = served.post("/v1/messages", raw)
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/event-stream")
    assert reply.headers[PATH_HEADER] == path
    rebuilt = check_stream(parse_sse(reply.content))
    assert rebuilt["content"][0]["text"] == whole.content[0].text  # type: ignore[union-attr]
    assert rebuilt["usage"]["output_tokens"] == whole.usage.output_tokens
    with served.client.messages.stream(**body) as stream:  # type: ignore[arg-type]
        final = stream.get_final_message()
    assert final.content[0].type == "text"
    assert final.content[0].text == whole.content[0].text  # type: ignore[union-attr]
    assert final.stop_reason == whole.stop_reason
    assert final.usage.output_tokens == whole.usage.output_tokens
    assert final.usage.input_tokens + (final.usage.cache_read_input_tokens or 0) == (
        whole.usage.input_tokens + (whole.usage.cache_read_input_tokens or 0)
    )


def test_stop_sequences_end_the_text_where_they_appear(served: Served, path: str) -> None:
    body = {"model": served.model, "max_tokens": 16, "messages": HELLO, "extra_body": GREEDY}
    free = served.client.messages.create(**body)  # type: ignore[arg-type]
    text = free.content[0].text  # type: ignore[union-attr]
    assert len(text) > 4, text
    stop = text[len(text) // 2 :][:2]
    stopped = served.client.messages.create(**body, stop_sequences=[stop])  # type: ignore[arg-type]
    got = stopped.content[0].text if stopped.content else ""  # type: ignore[union-attr]
    assert got == text[: text.index(stop)]
    if path == "passthrough":
        # llama-server names the sequence (and says end_turn, as its own build does).
        assert stopped.stop_sequence == stop
        assert stopped.stop_reason in ("stop_sequence", "end_turn")
    else:
        # llama-server's chat replies do not say which stop sequence matched.
        assert (stopped.stop_reason, stopped.stop_sequence) == ("end_turn", None)


def test_a_tool_round_trip(served: Served, path: str) -> None:
    """A conversation with tools, the assistant's tool_use and the tool_result sent back:
    the engine takes it and answers. (The tiny model makes no tool calls of its own; the
    tool_use replies of each engine's shape are checked against recorded bytes in
    tests/unit/test_gateway_anthropic.py.)"""
    history: list[anthropic.types.MessageParam] = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "Sunny, 21 C."},
                {"type": "text", "text": "Thanks."},
            ],
        },
    ]
    reply = served.client.messages.create(
        model=served.model,
        max_tokens=8,
        messages=history,
        tools=[WEATHER_TOOL],
        tool_choice={"type": "auto"},
        extra_body=GREEDY,
    )
    assert reply.content and reply.stop_reason in ("end_turn", "max_tokens", "tool_use")
    assert reply.usage.input_tokens + (reply.usage.cache_read_input_tokens or 0) > 0
    # The tools and the tool's result reach the model's prompt.
    bare = served.client.messages.count_tokens(model=served.model, messages=history[:1])
    full = served.client.messages.count_tokens(
        model=served.model, messages=history, tools=[WEATHER_TOOL]
    )
    assert full.input_tokens > bare.input_tokens


def test_unknown_model_is_not_found_in_anthropics_shape(served: Served) -> None:
    with pytest.raises(anthropic.NotFoundError) as caught:
        served.client.messages.create(model="no-such-model", max_tokens=4, messages=HELLO)
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["type"] == "error"
    assert body["error"]["type"] == "not_found_error"
    assert served.model in body["error"]["message"]


def test_the_context_budget_speaks_anthropics_words(served: Served, path: str) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        served.client.messages.create(model=served.model, max_tokens=100_000, messages=HELLO)
    body = caught.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    error = body["error"]
    assert error["type"] == "invalid_request_error"
    assert "input length and `max_tokens` exceed context limit" in error["message"]
    assert f"+ 100000 > {CONTEXT}" in error["message"]
    assert "ctx_size" in error["message"]
    long = [{"role": "user", "content": "hello world " * 400}]
    with pytest.raises(anthropic.BadRequestError) as caught:
        served.client.messages.create(model=served.model, max_tokens=4, messages=long)  # type: ignore[arg-type]
    assert "prompt is too long" in str(caught.value.body)


def test_count_tokens_counts_system_and_tools(served: Served, path: str) -> None:
    plain = served.client.messages.count_tokens(model=served.model, messages=HELLO)
    more = served.client.messages.count_tokens(
        model=served.model, messages=HELLO, system="A long system prompt, said at length."
    )
    assert 0 < plain.input_tokens < more.input_tokens


def test_requests_are_counted_per_path(served: Served, path: str) -> None:
    before = served.usage()
    message = served.client.messages.create(model=served.model, max_tokens=4, messages=HELLO)
    after = served.usage()
    label = f"anthropic/{path}"
    assert after["by_api"].get(label, 0) == before["by_api"].get(label, 0) + 1
    prompt = message.usage.input_tokens + (message.usage.cache_read_input_tokens or 0)
    assert after["prompt_tokens"] - before["prompt_tokens"] == prompt
    assert after["completion_tokens"] - before["completion_tokens"] == message.usage.output_tokens


def test_a_streamed_reply_is_counted_with_both_counts(served: Served, path: str) -> None:
    before = served.usage()
    with served.client.messages.stream(
        model=served.model, max_tokens=6, messages=HELLO, extra_body=GREEDY
    ) as stream:
        final = stream.get_final_message()
    after = served.usage()
    prompt = final.usage.input_tokens + (final.usage.cache_read_input_tokens or 0)
    assert prompt > 0
    assert after["prompt_tokens"] - before["prompt_tokens"] == prompt
    assert after["completion_tokens"] - before["completion_tokens"] == final.usage.output_tokens


def test_unknown_fields_are_dropped_and_named(served: Served) -> None:
    reply = served.post(
        "/v1/messages",
        {"model": served.model, "max_tokens": 4, "messages": HELLO, "n_probs": 3, "weird": 1},
    )
    assert reply.status_code == 200, reply.text
    assert reply.headers["x-roundhouse-dropped-fields"] == "n_probs, weird"


def test_refused_fields_and_media_are_refused_in_anthropics_shape(served: Served) -> None:
    reply = served.post(
        "/v1/messages", {"model": served.model, "max_tokens": 4, "messages": HELLO, "id_slot": 0}
    )
    assert reply.status_code == 400
    assert reply.json()["error"]["type"] == "invalid_request_error"
    image = {
        "role": "user",
        "content": [
            {"type": "image", "source": {"type": "url", "url": "http://169.254.169.254/x.png"}},
            {"type": "text", "text": "What is this?"},
        ],
    }
    reply = served.post(
        "/v1/messages", {"model": served.model, "max_tokens": 4, "messages": [image]}
    )
    assert reply.status_code == 400, reply.text
    body = reply.json()
    assert body["type"] == "error" and "gateway.media_domains" in body["error"]["message"]
    reply = served.post("/v1/messages", {"model": served.model, "messages": HELLO})
    assert reply.status_code == 400 and "max_tokens" in reply.json()["error"]["message"]


def test_the_key_guards_the_anthropic_routes(served: Served) -> None:
    body = {"model": served.model, "max_tokens": 4, "messages": HELLO}
    for route in ("/v1/messages", "/v1/messages/count_tokens"):
        for headers in ({}, {"x-api-key": "wrong-key-0123456789"}):
            reply = httpx.post(
                served.daemon.url + route, json=body, headers=headers, trust_env=False
            )
            assert reply.status_code == 401, (route, headers, reply.text)
            error = reply.json()
            assert error["type"] == "error", error
            assert error["error"]["type"] == "authentication_error", error
            assert "roundhouse gateway key" in error["error"]["message"]
    with pytest.raises(anthropic.AuthenticationError):
        Anthropic(base_url=served.daemon.url, api_key="wrong", max_retries=0).messages.create(
            model=served.model, max_tokens=4, messages=HELLO
        )
    # Claude Code's ANTHROPIC_AUTH_TOKEN: the key as a bearer token.
    bearer = Anthropic(base_url=served.daemon.url, auth_token=served.key, max_retries=0)
    assert bearer.messages.create(model=served.model, max_tokens=4, messages=HELLO).content


def test_a_foreign_origin_or_host_is_refused(served: Served) -> None:
    body = {"model": served.model, "max_tokens": 4, "messages": HELLO}
    for route in ("/v1/messages", "/v1/messages/count_tokens"):
        reply = served.post(route, body, origin="https://evil.example")
        assert reply.status_code == 403, (route, reply.text)
        reply = served.post(route, body, host="evil.example")
        assert reply.status_code == 403, (route, reply.text)


def test_an_engines_own_error_comes_in_anthropics_shape(served: Served, path: str) -> None:
    """llama-server refuses an image for a model without vision, in OpenAI's shape on its
    chat completions and its own on /v1/messages: the client gets Anthropic's either way."""
    pixel = (
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
        "AAAABJRU5ErkJggg=="
    )
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": pixel},
    }
    reply = served.post(
        "/v1/messages",
        {
            "model": served.model,
            "max_tokens": 4,
            "messages": [{"role": "user", "content": [image, {"type": "text", "text": "What?"}]}],
        },
    )
    assert 400 <= reply.status_code < 600 and reply.status_code != 200, reply.text
    assert reply.headers[PATH_HEADER] == path
    body = reply.json()
    assert body["type"] == "error", body
    assert body["error"]["type"] in ("invalid_request_error", "api_error"), body
    assert "image" in body["error"]["message"], body
