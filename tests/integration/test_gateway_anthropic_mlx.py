"""Anthropic's Messages API translated to a real mlx_lm.server's chat completions (it serves
no /v1/messages), with the official `anthropic` client: messages, streams checked event by
event, count_tokens, tool history, system prompts, stop sequences, counts equal to the
engine's own."""

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
from tests.daemon_process import DaemonProcess
from tests.support.serving import mlx, mlx_home, serving

READY_TIMEOUT_S = 90.0
GREEDY = {"temperature": 0}
HELLO: list[anthropic.types.MessageParam] = [{"role": "user", "content": "Say hello."}]
SYSTEM = "You are terse."


@dataclass
class Served:
    daemon: DaemonProcess
    instance: InstanceInfo
    model: str
    client: Anthropic

    def engine_chat(self, messages: list[dict[str, Any]], max_tokens: int) -> dict[str, Any]:
        """The same request straight at mlx_lm.server, for its own counts."""
        reply = httpx.post(
            self.instance.url.rstrip("/") + "/v1/chat/completions",
            json={"messages": messages, "max_tokens": max_tokens, **GREEDY},
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
    root = mlx_home(tmp_path_factory.mktemp("gateway-anthropic-mlx") / "home", mlx_python)
    with serving(root, mlx(tiny_hf_model), ready_timeout_s=READY_TIMEOUT_S) as (daemon, [info]):
        client = Anthropic(base_url=daemon.url, api_key="unused", max_retries=0, timeout=60)
        yield Served(daemon, info, info.models[0], client)
        client.close()


def test_a_message_is_translated_and_counted_as_the_engine_counts(served: Served) -> None:
    raw = served.client.messages.with_raw_response.create(
        model=served.model, max_tokens=8, system=SYSTEM, messages=HELLO, extra_body=GREEDY
    )
    assert raw.headers["x-roundhouse-path"] == "translated"
    assert raw.headers["x-roundhouse-engine"] == "mlx"
    message = raw.parse()
    engine = served.engine_chat([{"role": "system", "content": SYSTEM}, *HELLO], 8)
    assert message.model == served.model
    assert message.content[0].type == "text"
    assert message.content[0].text == engine["choices"][0]["message"]["content"]
    usage = message.usage
    assert (
        usage.input_tokens + (usage.cache_read_input_tokens or 0)
        == (engine["usage"]["prompt_tokens"])
    )
    assert usage.output_tokens == engine["usage"]["completion_tokens"]
    assert message.stop_reason in ("end_turn", "max_tokens")
    counted = served.client.messages.count_tokens(model=served.model, system=SYSTEM, messages=HELLO)
    assert counted.input_tokens == engine["usage"]["prompt_tokens"]


def test_a_stream_is_a_valid_sequence_and_rebuilds_the_message(served: Served) -> None:
    whole = served.client.messages.create(
        model=served.model, max_tokens=8, messages=HELLO, extra_body=GREEDY
    )
    reply = httpx.post(
        served.daemon.url + "/v1/messages",
        json={"model": served.model, "max_tokens": 8, "messages": HELLO, "stream": True, **GREEDY},
        trust_env=False,
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    assert reply.headers["x-roundhouse-path"] == "translated"
    rebuilt = check_stream(parse_sse(reply.content))
    assert rebuilt["content"][0]["text"] == whole.content[0].text  # type: ignore[union-attr]
    with served.client.messages.stream(
        model=served.model, max_tokens=8, messages=HELLO, extra_body=GREEDY
    ) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == whole.content[0].text  # type: ignore[union-attr]
    assert final.usage.output_tokens == whole.usage.output_tokens
    assert final.usage.input_tokens + (final.usage.cache_read_input_tokens or 0) == (
        whole.usage.input_tokens + (whole.usage.cache_read_input_tokens or 0)
    )


def test_stop_sequences_end_the_text(served: Served) -> None:
    """mlx_lm matches a stop sequence on token ids, so the one chosen is a whole token of
    the free reply: the text of one streamed delta (mlx_lm streams a token per event)."""
    reply = httpx.post(
        served.daemon.url + "/v1/messages",
        json={"model": served.model, "max_tokens": 16, "messages": HELLO, "stream": True, **GREEDY},
        trust_env=False,
        timeout=60,
    )
    deltas = [
        data["delta"]["text"]
        for name, data in parse_sse(reply.content)
        if name == "content_block_delta" and data["delta"]["type"] == "text_delta"
    ]
    text = "".join(deltas)
    offsets = [sum(len(d) for d in deltas[:i]) for i in range(len(deltas))]
    # A middle token that first appears where it is in the reply.
    candidates = [
        (d, at)
        for d, at in zip(deltas, offsets, strict=True)
        if at > 0 and d.strip() and text.index(d) == at
    ]
    assert candidates, deltas
    stop, at = candidates[len(candidates) // 2]
    stopped = served.client.messages.create(
        model=served.model,
        max_tokens=16,
        messages=HELLO,
        stop_sequences=[stop],
        extra_body=GREEDY,
    )
    got = stopped.content[0].text if stopped.content else ""  # type: ignore[union-attr]
    assert got == text[:at], (stop, text)
    # mlx_lm's chat replies do not say which stop sequence matched.
    assert (stopped.stop_reason, stopped.stop_sequence) == ("end_turn", None)


def test_a_tool_round_trip(served: Served) -> None:
    history: list[anthropic.types.MessageParam] = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"c": 1}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "Sunny"}],
        },
    ]
    tools: list[anthropic.types.ToolParam] = [
        {"name": "get_weather", "input_schema": {"type": "object"}}
    ]
    reply = served.client.messages.create(
        model=served.model, max_tokens=6, messages=history, tools=tools, extra_body=GREEDY
    )
    assert reply.content and reply.usage.output_tokens > 0


def test_an_unknown_model_is_not_found_in_anthropics_shape(served: Served) -> None:
    with pytest.raises(anthropic.NotFoundError) as caught:
        served.client.messages.create(model="no-such-claude", max_tokens=4, messages=HELLO)
    body = caught.value.body
    assert isinstance(body, dict) and body["error"]["type"] == "not_found_error"
