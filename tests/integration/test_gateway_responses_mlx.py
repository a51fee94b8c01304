"""OpenAI's Responses API translated to a real mlx_lm.server's chat completions (it serves
no /v1/responses), with the official `openai` client: responses whole and streamed (each
stream checked event by event), a function-tool history, previous_response_id, counts equal
to the engine's own."""

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
from tests.daemon_process import DaemonProcess
from tests.responses_stream import check_stream, parse_sse
from tests.support.serving import mlx, mlx_home, serving

READY_TIMEOUT_S = 90.0
INSTRUCTIONS = "You are terse."


@dataclass
class Served:
    daemon: DaemonProcess
    instance: InstanceInfo
    model: str
    client: OpenAI

    def engine_chat(self, messages: list[dict[str, Any]], max_tokens: int) -> dict[str, Any]:
        """The same request straight at mlx_lm.server, for its own counts."""
        reply = httpx.post(
            self.instance.url.rstrip("/") + "/v1/chat/completions",
            json={"messages": messages, "max_tokens": max_tokens, "temperature": 0},
            headers=self.daemon.engine_headers(self.instance.id),
            trust_env=False,
            timeout=60,
        )
        assert reply.status_code == 200, reply.text
        answer: dict[str, Any] = reply.json()
        return answer


@pytest.fixture(scope="module")
def served(
    mlx_python: str, tiny_hf_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    root = mlx_home(tmp_path_factory.mktemp("gateway-responses-mlx") / "home", mlx_python)
    with serving(root, mlx(tiny_hf_model), ready_timeout_s=READY_TIMEOUT_S) as (daemon, [info]):
        client = OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        yield Served(daemon, info, info.models[0], client)
        client.close()


def test_a_response_is_translated_and_counted_as_the_engine_counts(served: Served) -> None:
    raw = served.client.responses.with_raw_response.create(
        model=served.model,
        instructions=INSTRUCTIONS,
        input="Say hello.",
        max_output_tokens=8,
        temperature=0,
    )
    assert raw.headers["x-roundhouse-path"] == "translated"
    assert raw.headers["x-roundhouse-engine"] == "mlx"
    response = raw.parse()
    engine = served.engine_chat(
        [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": "Say hello."}],
        8,
    )
    assert response.model == served.model
    assert response.output_text == engine["choices"][0]["message"]["content"]
    assert response.usage is not None
    assert response.usage.input_tokens == engine["usage"]["prompt_tokens"]
    assert response.usage.output_tokens == engine["usage"]["completion_tokens"]
    finish = engine["choices"][0]["finish_reason"]
    assert response.status == ("incomplete" if finish == "length" else "completed")


def test_a_stream_is_a_valid_sequence_with_the_engines_counts(served: Served) -> None:
    body = {"model": served.model, "input": "Say hello.", "max_output_tokens": 8, "temperature": 0}
    whole = served.client.responses.create(**body)  # type: ignore[call-overload]
    reply = httpx.post(
        served.daemon.url + "/v1/responses",
        json={**body, "stream": True},
        trust_env=False,
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    assert reply.headers["x-roundhouse-path"] == "translated"
    final = check_stream(parse_sse(reply.content))
    assert [i["content"][0]["text"] for i in final["output"]] == [whole.output_text]
    assert final["usage"]["input_tokens"] == whole.usage.input_tokens  # type: ignore[union-attr]
    assert final["usage"]["output_tokens"] == whole.usage.output_tokens  # type: ignore[union-attr]
    events = list(served.client.responses.create(**body, stream=True))  # type: ignore[call-overload]
    assert events[-1].response.output_text == whole.output_text


def test_a_function_tool_history_and_previous_response_id(served: Served) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"},
    ]
    tools: list[Any] = [
        {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    ]
    first = served.client.responses.create(
        model=served.model,
        input=history,
        tools=tools,
        max_output_tokens=6,
        temperature=0,  # type: ignore[arg-type]
    )
    assert first.output and first.usage is not None and first.usage.output_tokens > 0
    second = served.client.responses.create(
        model=served.model,
        previous_response_id=first.id,
        input="Thanks.",
        tools=tools,
        max_output_tokens=4,
        temperature=0,
    )
    assert second.usage is not None
    assert second.usage.input_tokens > first.usage.input_tokens
    with pytest.raises(openai.BadRequestError) as caught:
        served.client.responses.create(
            model=served.model, previous_response_id="resp_gone", input="Hi."
        )
    assert caught.value.body["code"] == "previous_response_not_found"  # type: ignore[index]


def test_store_false_keeps_nothing(served: Served) -> None:
    kept = served.client.responses.create(
        model=served.model, input="Hi.", max_output_tokens=2, store=False
    )
    assert kept.store is False
    with pytest.raises(openai.BadRequestError) as caught:
        served.client.responses.create(
            model=served.model, previous_response_id=kept.id, input="Hi.", max_output_tokens=2
        )
    assert caught.value.body["code"] == "previous_response_not_found"  # type: ignore[index]
    assert caught.value.body["param"] == "previous_response_id"  # type: ignore[index]
