"""OpenAI's Responses API through a real daemon and the real llama-server, with the official
`openai` client: passed through to llama-server's own /v1/responses, and translated to its
chat completions when pass-through is off. Responses whole and streamed (each stream checked
event by event), a function-tool round trip, previous_response_id and store: false, counts
equal to the engine's own, errors in OpenAI's shape, and the gateway's guards on the route."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai import OpenAI

from roundhouse.api.instances import InstanceInfo
from tests.daemon_process import DaemonProcess, path_with
from tests.responses_stream import check_stream, parse_sse
from tests.support.serving import llama_cpp, serving
from tests.support.standins import keyring_env

READY_TIMEOUT_S = 60.0
CONTEXT = 512
PATH_HEADER = "x-roundhouse-path"
GREEDY = {"temperature": 0}
WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
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
    client: OpenAI

    def control(self) -> httpx.Client:
        return self.daemon.control()

    def set_pass_through(self, on: bool) -> None:
        self.daemon.set_pass_through(on)

    def usage(self) -> dict[str, Any]:
        return self.daemon.gateway_usage(self.instance.id)

    def post(self, body: dict[str, Any], **headers: str) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.key}", **headers}
        return httpx.post(
            self.daemon.url + "/v1/responses",
            json=body,
            headers=headers,
            trust_env=False,
            timeout=60,
        )


@pytest.fixture(scope="module")
def served(
    llama_server_binary: Path, tiny_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("gateway-responses")
    env = {**path_with(llama_server_binary), **keyring_env(folder)}
    request = llama_cpp(
        tiny_gguf,
        ctx_size=CONTEXT,
        parallel=1,
        served_name="tiny-chat",
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
        client = OpenAI(base_url=daemon.url + "/v1", api_key=key, max_retries=0, timeout=60)
        yield Served(daemon, info, info.models[0], key, client)
        client.close()


@pytest.fixture(params=["passthrough", "translated"])
def path(request: pytest.FixtureRequest, served: Served) -> Iterator[str]:
    """Each test runs passed through to llama-server's /v1/responses and translated to its
    chat completions."""
    served.set_pass_through(request.param == "passthrough")
    try:
        yield str(request.param)
    finally:
        served.set_pass_through(True)


def _engine_chat(served: Served, messages: list[dict[str, Any]], max_tokens: int) -> Any:
    url = served.instance.url.rstrip("/") + "/v1/chat/completions"
    return httpx.post(
        url,
        json={"messages": messages, "max_tokens": max_tokens, "temperature": 0},
        headers=served.daemon.engine_headers(served.instance.id),
        trust_env=False,
        timeout=60,
    ).json()


def test_a_response_with_instructions_counts_as_the_engine_does(served: Served, path: str) -> None:
    before = served.usage()
    raw = served.client.responses.with_raw_response.create(
        model=served.model,
        instructions="You are terse.",
        input="Say hello.",
        max_output_tokens=10,
        temperature=0,
    )
    assert raw.headers[PATH_HEADER] == path
    assert raw.headers["x-roundhouse-engine"] == "llama.cpp"
    response = raw.parse()
    assert response.id.startswith("resp_") and response.object == "response"
    assert response.model == served.model
    assert response.status in ("completed", "incomplete")
    assert response.output[-1].type == "message"
    engine = _engine_chat(
        served,
        [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Say hello."},
        ],
        10,
    )
    assert response.output_text == engine["choices"][0]["message"]["content"]
    assert response.usage is not None
    assert response.usage.input_tokens == engine["usage"]["prompt_tokens"]
    assert response.usage.output_tokens == engine["usage"]["completion_tokens"]
    assert response.usage.total_tokens == (
        response.usage.input_tokens + response.usage.output_tokens
    )
    # The gateway's own count of a whole reply: the engine's numbers, under this API and path.
    after = served.usage()
    assert after["prompt_tokens"] - before["prompt_tokens"] == response.usage.input_tokens
    assert after["completion_tokens"] - before["completion_tokens"] == response.usage.output_tokens
    label = f"responses/{path}"
    assert after["by_api"].get(label, 0) == before["by_api"].get(label, 0) + 1
    # The engine stopped for length (its chat completion says so): the reply says so as OpenAI
    # does, on both paths (llama-server's own endpoint says completed; the gateway reads its
    # count against max_output_tokens).
    assert engine["choices"][0]["finish_reason"] == "length"
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"


def test_a_stream_is_a_valid_sequence_and_counted(served: Served, path: str) -> None:
    body = {"model": served.model, "input": "Say hello.", "max_output_tokens": 8, **GREEDY}
    whole = served.client.responses.create(**body)  # type: ignore[call-overload]
    before = served.usage()
    reply = served.post({**body, "stream": True})
    after = served.usage()
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("text/event-stream")
    assert reply.headers[PATH_HEADER] == path
    final = check_stream(parse_sse(reply.content))
    assert final["model"] == served.model
    texts = [i["content"][0]["text"] for i in final["output"] if i["type"] == "message"]
    assert texts == [whole.output_text]
    assert final["usage"]["output_tokens"] == whole.usage.output_tokens  # type: ignore[union-attr]
    assert after["prompt_tokens"] - before["prompt_tokens"] == final["usage"]["input_tokens"]
    assert (
        after["completion_tokens"] - before["completion_tokens"]
        == (final["usage"]["output_tokens"])
    )
    label = f"responses/{path}"
    assert after["by_api"].get(label, 0) == before["by_api"].get(label, 0) + 1
    # The SDK's own stream reads the same events.
    events = list(served.client.responses.create(**body, stream=True))  # type: ignore[call-overload]
    assert events[0].type == "response.created"
    assert events[-1].type in ("response.completed", "response.incomplete")
    assert events[-1].response.output_text == whole.output_text


def test_a_function_tool_round_trip(served: Served, path: str) -> None:
    """History with the model's function_call and its output sent back: the engine takes it
    and answers. (The tiny model makes no calls of its own; function_call replies of each
    engine's shape are checked in tests/integration/test_tool_calls_every_surface.py.)"""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {
            "type": "function_call",
            "call_id": "call_01",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_01", "output": "Sunny, 21 C."},
    ]
    response = served.client.responses.create(
        model=served.model,
        input=history,  # type: ignore[arg-type]
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
        tool_choice="auto",
        max_output_tokens=8,
        temperature=0,
    )
    assert response.output and response.usage is not None
    bare = served.client.responses.create(
        model=served.model,
        input=history[:1],
        max_output_tokens=1,  # type: ignore[arg-type]
    )
    assert bare.usage is not None
    # The call, its result and the tool reach the prompt.
    assert response.usage.input_tokens > bare.usage.input_tokens + 10
    # The call as a reply's output item carries its id and status: the same prompt.
    as_output = [history[0], {**history[1], "id": "fc_01", "status": "completed"}, history[2]]
    again = served.client.responses.create(
        model=served.model,
        input=as_output,  # type: ignore[arg-type]
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
        tool_choice="auto",
        max_output_tokens=8,
        temperature=0,
    )
    assert again.usage is not None
    assert again.usage.input_tokens == response.usage.input_tokens


def test_previous_response_id_continues_the_conversation(served: Served, path: str) -> None:
    first = served.client.responses.create(
        model=served.model, input="My name is Ada.", max_output_tokens=6, temperature=0
    )
    second = served.client.responses.create(
        model=served.model,
        previous_response_id=first.id,
        input="What is my name?",
        max_output_tokens=6,
        temperature=0,
    )
    assert second.previous_response_id == first.id
    # The same conversation sent whole: the same prompt, token for token.
    whole = served.client.responses.create(
        model=served.model,
        input=[
            {"role": "user", "content": "My name is Ada."},
            {"role": "assistant", "content": first.output_text},
            {"role": "user", "content": "What is my name?"},
        ],
        max_output_tokens=6,
        temperature=0,
    )
    assert second.usage is not None and whole.usage is not None
    assert second.usage.input_tokens == whole.usage.input_tokens
    assert second.output_text == whole.output_text
    # Chained again, streamed: the id of a streamed response is kept too.
    with served.client.responses.stream(
        model=served.model,
        previous_response_id=second.id,
        input="And again?",
        max_output_tokens=4,
        temperature=0,
    ) as stream:
        events = [e.type for e in stream]
    assert events[-1] in ("response.completed", "response.incomplete")


def test_store_false_keeps_nothing(served: Served, path: str) -> None:
    kept = served.client.responses.create(
        model=served.model, input="Hi.", max_output_tokens=2, store=False
    )
    with pytest.raises(openai.BadRequestError) as caught:
        served.client.responses.create(
            model=served.model, previous_response_id=kept.id, input="Hi.", max_output_tokens=2
        )
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["code"] == "previous_response_not_found"
    assert body["param"] == "previous_response_id"
    assert "input" in body["message"]


def test_unknown_model_is_not_found_in_openais_shape(served: Served) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        served.client.responses.create(model="no-such-model", input="Hi.")
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["type"] == "invalid_request_error" and body["code"] == "model_not_found"
    assert served.model in body["message"]


def test_the_context_budget_names_max_output_tokens(served: Served, path: str) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        served.client.responses.create(model=served.model, input="Hi.", max_output_tokens=100_000)
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["code"] == "context_length_exceeded"
    assert body["param"] == "max_output_tokens"
    assert "100000" in body["message"] and str(CONTEXT) in body["message"]
    assert "ctx_size" in body["message"]
    reply = served.post(
        {"model": served.model, "input": "Hi.", "max_output_tokens": 100_000, "stream": True}
    )
    assert reply.status_code == 400
    assert reply.json()["error"]["param"] == "max_output_tokens"


def test_fields_dropped_named_and_refused(served: Served) -> None:
    reply = served.post({"model": served.model, "input": "Hi.", "max_output_tokens": 2, "weird": 1})
    assert reply.status_code == 200, reply.text
    assert reply.headers["x-roundhouse-dropped-fields"] == "weird"
    for extra, param in (
        ({"id_slot": 0}, "id_slot"),
        ({"background": True}, "background"),
        ({"conversation": "conv_1"}, "conversation"),
    ):
        reply = served.post({"model": served.model, "input": "Hi.", **extra})
        assert reply.status_code == 400, (extra, reply.text)
        assert reply.json()["error"]["param"] == param
    reply = served.post({"model": served.model, "input": "Hi.", "tools": [{"type": "web_search"}]})
    assert reply.status_code == 400
    assert "function tool" in reply.json()["error"]["message"]
    image = {
        "role": "user",
        "content": [
            {"type": "input_image", "image_url": "http://169.254.169.254/x.png"},
            {"type": "input_text", "text": "What is this?"},
        ],
    }
    reply = served.post({"model": served.model, "input": [image]})
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == "media_url_not_allowed"


def test_the_key_and_origin_guard_the_route(served: Served) -> None:
    body = {"model": served.model, "input": "Hi.", "max_output_tokens": 2}
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        reply = httpx.post(
            served.daemon.url + "/v1/responses", json=body, headers=headers, trust_env=False
        )
        assert reply.status_code == 401, (headers, reply.text)
    reply = served.post(body, Origin="https://evil.example")
    assert reply.status_code == 403, reply.text
    reply = served.post(body, Host="evil.example")
    assert reply.status_code == 403, reply.text
