"""Anthropic Messages on the gateway, its translators on their own: requests to chat
completions, engines' replies and streams (bytes as llama.cpp, vLLM and SGLang send them:
reasoning, tool calls streamed in pieces, several by index) back to Anthropic's shapes, and
errors in Anthropic's words."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2
import pytest

from roundhouse.core.gateway.anthropic.reply import (
    engine_error,
    from_chat,
    gateway_error,
)
from roundhouse.core.gateway.anthropic.request import screen_messages, to_chat
from roundhouse.core.gateway.anthropic.stream import chat_to_messages
from roundhouse.core.gateway.anthropic.surface import AnthropicSurface, CountTokensSurface
from roundhouse.core.gateway.errors import BadRequest, ContextTooLong, ModelNotFound, QueueFull
from roundhouse.core.gateway.fields import FieldRefused, MediaRefused
from roundhouse.core.gateway.sse import relay
from roundhouse.core.gateway.usage import UsageCounter
from tests.anthropic_stream import check_stream, parse_sse
from tests.fixtures import engine_shapes as shapes

TOOLS = [
    {
        "name": "get_weather",
        "description": "The weather in a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


def _sse(*chunks: dict[str, Any] | str) -> list[bytes]:
    return [
        b"data: " + (c.encode() if isinstance(c, str) else json.dumps(c).encode()) + b"\n\n"
        for c in chunks
    ]


def _chunk(delta: dict[str, Any], finish: str | None = None, **choice: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-abc",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, **choice}],
    }


def _usage(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return {"id": "chatcmpl-abc", "object": "chat.completion.chunk", "choices": [], "usage": usage}


# llama.cpp (llama-server, --jinja, a reasoning model): reasoning_content deltas, then a
# tool call whose first delta carries id and name and the arguments in pieces, then a second
# call by index; the usage chunk (with timings) and [DONE].
LLAMA_CPP = _sse(
    _chunk({"role": "assistant", "content": None}),
    _chunk({"reasoning_content": "The user wants"}),
    _chunk({"reasoning_content": " the weather."}),
    _chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "wXy1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"ci'},
                }
            ]
        }
    ),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ty":"Paris"}'}}]}),
    _chunk(
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "wXy2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":'},
                }
            ]
        }
    ),
    _chunk({"tool_calls": [{"index": 1, "function": {"arguments": '"Oslo"}'}}]}),
    _chunk({}, "tool_calls"),
    {**_usage(41, 30, cached=12), "timings": {"prompt_n": 29, "predicted_n": 30}},
    "[DONE]",
)
# vLLM (--enable-auto-tool-choice, a reasoning parser; 0.10+ says `reasoning`): the name
# alone first, then the arguments in several pieces; two calls by index.
VLLM = _sse(
    _chunk({"role": "assistant", "content": ""}),
    _chunk({"reasoning": "Two cities."}),
    _chunk({"content": "Checking both."}),
    _chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "chatcmpl-tool-1",
                    "type": "function",
                    "function": {"name": "get_weather"},
                }
            ]
        }
    ),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
    _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
    _chunk(
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "chatcmpl-tool-2",
                    "type": "function",
                    "function": {"name": "get_weather"},
                }
            ]
        }
    ),
    _chunk({"tool_calls": [{"index": 1, "function": {"arguments": '{"city": "Oslo"}'}}]}),
    _chunk({}, "tool_calls", stop_reason=None),
    _usage(50, 22),
    "[DONE]",
)
# SGLang (--tool-call-parser, --reasoning-parser): reasoning_content, a call whose first
# delta has name and empty arguments, later deltas with id and name null.
SGLANG = _sse(
    _chunk({"role": "assistant", "content": ""}),
    _chunk({"reasoning_content": "Hmm.", "content": None}),
    _chunk(
        {
            "tool_calls": [
                {
                    "id": "call_0abc",
                    "index": 0,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": ""},
                }
            ]
        }
    ),
    _chunk(
        {
            "tool_calls": [
                {
                    "id": None,
                    "index": 0,
                    "type": "function",
                    "function": {"name": None, "arguments": '{"city": "Paris"}'},
                }
            ]
        }
    ),
    _chunk({}, "tool_calls", matched_stop=None),
    _usage(33, 9),
    "[DONE]",
)
TEXT_WITH_STOP = _sse(
    _chunk({"role": "assistant", "content": ""}),
    _chunk({"content": "Hello"}),
    _chunk({"content": " there"}),
    _chunk({}, "stop", stop_reason="END"),
    _usage(10, 2),
    "[DONE]",
)


async def _collect(stream: AsyncIterator[bytes]) -> bytes:
    return b"".join([chunk async for chunk in stream])


async def _items(items: list[bytes]) -> AsyncIterator[bytes]:
    for item in items:
        yield item


def _convert(events: list[bytes], stops: list[str] | None = None, together: bool = False) -> bytes:
    """The engine's events through the gateway's relay (as `proxy` runs them) and the
    converter; `together`: all in one read, as a fast engine's bytes may come."""
    seen: list[Any] = []
    source = [b"".join(events)] if together else events
    relayed = relay(_items(source), forward_usage=True, on_usage=seen.append)
    return asyncio.run(_collect(chat_to_messages("client-name", stops or [])(relayed)))


@pytest.mark.parametrize("together", [False, True])
def test_llama_cpp_reasoning_and_two_tool_calls(together: bool) -> None:
    message = check_stream(parse_sse(_convert(LLAMA_CPP, together=together)))
    assert [b["type"] for b in message["content"]] == ["thinking", "tool_use", "tool_use"]
    assert message["content"][0]["thinking"] == "The user wants the weather."
    assert message["content"][1]["id"] == "wXy1"
    assert message["content"][1]["input"] == {"city": "Paris"}
    assert message["content"][2]["input"] == {"city": "Oslo"}
    assert message["stop_reason"] == "tool_use"
    assert message["model"] == "client-name"
    # Anthropic's split: input_tokens not from the cache; together the engine's prompt.
    assert message["usage"] == {
        "input_tokens": 29,
        "output_tokens": 30,
        "cache_read_input_tokens": 12,
    }


def test_vllm_reasoning_text_and_tool_calls_in_pieces() -> None:
    message = check_stream(parse_sse(_convert(VLLM)))
    assert [b["type"] for b in message["content"]] == ["thinking", "text", "tool_use", "tool_use"]
    assert message["content"][1]["text"] == "Checking both."
    assert [b["input"] for b in message["content"][2:]] == [{"city": "Paris"}, {"city": "Oslo"}]
    assert message["content"][3]["id"] == "chatcmpl-tool-2"
    assert message["usage"] == {"input_tokens": 50, "output_tokens": 22}


def test_sglang_tool_call_with_null_id_and_name_later() -> None:
    message = check_stream(parse_sse(_convert(SGLANG)))
    assert [b["type"] for b in message["content"]] == ["thinking", "tool_use"]
    assert message["content"][1] == {
        "type": "tool_use",
        "id": "call_0abc",
        "name": "get_weather",
        "input": {"city": "Paris"},
    }


def test_a_call_whose_name_comes_late_opens_its_block_when_it_does() -> None:
    events = _sse(
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]}),
        _chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f"}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}),
        _chunk({}, "tool_calls"),
        _usage(5, 4),
    )
    message = check_stream(parse_sse(_convert(events)))
    assert message["content"] == [{"type": "tool_use", "id": "c1", "name": "f", "input": {"a": 1}}]


def test_a_stop_sequence_is_named_where_the_engine_says_it() -> None:
    message = check_stream(parse_sse(_convert(TEXT_WITH_STOP, ["END"])))
    assert message["content"] == [{"type": "text", "text": "Hello there"}]
    assert (message["stop_reason"], message["stop_sequence"]) == ("stop_sequence", "END")
    plain = check_stream(parse_sse(_convert(TEXT_WITH_STOP, [])))
    assert (plain["stop_reason"], plain["stop_sequence"]) == ("end_turn", None)


def test_length_is_max_tokens_and_an_empty_stream_is_still_whole() -> None:
    events = _sse(_chunk({"content": "a"}), _chunk({}, "length"), _usage(3, 1))
    assert check_stream(parse_sse(_convert(events)))["stop_reason"] == "max_tokens"
    empty = check_stream(parse_sse(_convert([])))
    assert empty["content"] == [] and empty["stop_reason"] == "end_turn"


def test_an_engine_error_mid_stream_ends_it_in_anthropics_shape() -> None:
    events = _sse(
        _chunk({"content": "a"}),
        {"error": {"message": "The engine broke off the stream: boom.", "type": "server_error"}},
    )
    parsed = parse_sse(_convert(events))
    assert parsed[-1][0] == "error"
    assert parsed[-1][1]["error"]["type"] == "api_error"
    assert "boom" in parsed[-1][1]["error"]["message"]
    assert all(name != "message_stop" for name, _ in parsed)


def test_the_sdk_rebuilds_the_translated_stream() -> None:
    """The official client reads the converted bytes and builds the same message."""
    body = _convert(VLLM)

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})

    transport = httpx2.MockTransport(answer)
    client = anthropic.Anthropic(
        api_key="k", base_url="http://gateway", http_client=httpx2.Client(transport=transport)
    )
    with client.messages.stream(
        model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert final.content[2].input == {"city": "Paris"}  # type: ignore[union-attr]
    assert final.stop_reason == "tool_use"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (50, 22)


def test_a_whole_reply_with_reasoning_text_and_tool_calls() -> None:
    raw = json.dumps(
        {
            "id": "chatcmpl-9",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": "Looking.",
                        "reasoning_content": "Think.",
                        "tool_calls": [
                            {
                                "id": "t1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": '{"city":"X"}'},
                            },
                            {
                                "id": "t2",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": "not json"},
                            },
                        ],
                    },
                }
            ],
            "usage": _usage(20, 7, cached=5)["usage"],
        }
    ).encode()
    message = from_chat(raw, "client-name", [])
    assert message["id"] == "msg_9" and message["model"] == "client-name"
    assert [b["type"] for b in message["content"]] == ["thinking", "text", "tool_use", "tool_use"]
    assert message["content"][2]["input"] == {"city": "X"}
    assert message["content"][3]["input"] == {}
    assert message["stop_reason"] == "tool_use" and message["stop_sequence"] is None
    assert message["usage"] == {
        "input_tokens": 15,
        "output_tokens": 7,
        "cache_read_input_tokens": 5,
    }
    anthropic.types.Message.model_validate(message)


def test_a_request_becomes_the_chat_completion_it_asks_for() -> None:
    body: dict[str, Any] = {
        "model": "m",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Be kind."}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this, and the weather?"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "A cat.", "signature": "s"},
                    {"type": "text", "text": "A cat."},
                    {"type": "tool_use", "id": "tu1", "name": "get_weather", "input": {"c": 1}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu1",
                        "content": [{"type": "text", "text": "Sunny"}],
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu2",
                        "content": "no",
                        "is_error": True,
                    },
                    {"type": "text", "text": "And now?"},
                ],
            },
        ],
        "tools": TOOLS,
        "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
        "stop_sequences": ["END"],
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 20,
        "metadata": {"user_id": "u1"},
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "stream": True,
    }
    chat = to_chat(body)
    assert chat["messages"] == [
        {"role": "system", "content": "Be brief.\nBe kind."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this, and the weather?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
            ],
        },
        {
            "role": "assistant",
            "content": "A cat.",
            "reasoning_content": "A cat.",
            "tool_calls": [
                {
                    "id": "tu1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"c": 1}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "tu1", "content": "Sunny"},
        {"role": "tool", "tool_call_id": "tu2", "content": "Error: no"},
        {"role": "user", "content": "And now?"},
    ]
    assert chat["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "The weather in a city.",
                "parameters": TOOLS[0]["input_schema"],
            },
        }
    ]
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert chat["parallel_tool_calls"] is False
    assert chat["stop"] == ["END"]
    assert (chat["max_tokens"], chat["temperature"], chat["top_p"], chat["top_k"]) == (
        100,
        0.2,
        0.9,
        20,
    )
    assert chat["user"] == "u1" and chat["stream"] is True
    assert chat["chat_template_kwargs"] == {"enable_thinking": True}


@pytest.mark.parametrize(
    ("choice", "chat"), [("auto", "auto"), ("any", "required"), ("none", "none")]
)
def test_tool_choice(choice: str, chat: str) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": TOOLS}
    assert to_chat({**body, "tool_choice": {"type": choice}})["tool_choice"] == chat


def _body(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "x"}], **extra}


def test_unknown_fields_are_dropped_and_refused_ones_refused() -> None:
    body = _body(n_probs=2, output_config={"effort": "high"}, temperature=0)
    assert sorted(screen_messages(body, [])) == ["n_probs", "output_config"]
    assert "n_probs" not in body and body["temperature"] == 0
    with pytest.raises(FieldRefused, match="id_slot"):
        screen_messages(_body(id_slot=1), [])


def test_media_urls_need_an_allowed_host() -> None:
    image = {"type": "image", "source": {"type": "url", "url": "http://127.0.0.1:8080/x.png"}}
    body = _body(messages=[{"role": "user", "content": [image]}])
    with pytest.raises(MediaRefused, match=r"messages\.0\.content\.0\.source\.url"):
        screen_messages(body, [])
    inner = {"type": "image", "source": {"type": "url", "url": "https://img.example/a.png"}}
    result = {"type": "tool_result", "tool_use_id": "t", "content": [inner]}
    body = _body(messages=[{"role": "user", "content": [result]}])
    with pytest.raises(MediaRefused):
        screen_messages(body, [])
    assert screen_messages(body, ["img.example"]) == []
    # The translated request is checked as chat's is: the image went to a user turn.
    surface = AnthropicSurface()
    with pytest.raises(MediaRefused):
        surface.prepare(_body(messages=[{"role": "user", "content": [result]}]), [])


@pytest.mark.parametrize(
    "body",
    [
        _body(max_tokens=None),
        _body(messages=[]),
        _body(messages=[{"role": "system", "content": "x"}]),
        _body(messages=[{"role": "user", "content": [{"type": "container_upload"}]}]),
        _body(tools=[{"type": "web_search_20250305", "name": "web_search"}]),
        _body(
            messages=[
                {
                    "role": "user",
                    "content": [{"type": "document", "source": {"type": "file", "file_id": "f"}}],
                }
            ]
        ),
    ],
)
def test_requests_that_cannot_run_are_refused_with_what_to_do(body: dict[str, Any]) -> None:
    with pytest.raises(BadRequest):
        screen_messages(body, [])


def test_count_tokens_takes_no_max_tokens() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 3}
    prepared = CountTokensSurface().prepare(body, [])
    assert prepared.dropped == ["max_tokens"] and prepared.budget is None


def test_the_context_budget_in_anthropics_words() -> None:
    both = ContextTooLong(
        "Roundhouse's words.", prompt_tokens=400, max_tokens=200, context=512, param="max_tokens"
    )
    error = gateway_error(both)
    assert error["type"] == "error"
    assert error["error"]["type"] == "invalid_request_error"
    assert error["error"]["message"].startswith(
        "input length and `max_tokens` exceed context limit: 400 + 200 > 512, decrease input "
        "length or `max_tokens` and try again. Roundhouse's words."
    )
    long = ContextTooLong("w", prompt_tokens=600, max_tokens=None, context=512, param="messages")
    assert gateway_error(long)["error"]["message"].startswith(
        "prompt is too long: 600 tokens > 512 maximum"
    )
    # The engine refused the prompt without its count (Ollama): the limit alone.
    uncounted = ContextTooLong("w", prompt_tokens=None, max_tokens=4, context=512, param="messages")
    assert gateway_error(uncounted)["error"]["message"].startswith(
        "prompt is too long: more than 512 maximum"
    )


def test_gateway_errors_get_anthropics_types() -> None:
    assert gateway_error(ModelNotFound("no"))["error"]["type"] == "not_found_error"
    assert gateway_error(QueueFull("busy"))["error"]["type"] == "rate_limit_error"


def test_engine_errors_are_said_in_anthropics_shape() -> None:
    openai_shape = b'{"error":{"code":400,"message":"bad thing","type":"invalid_request_error"}}'
    assert json.loads(engine_error(400, openai_shape)) == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "bad thing"},
    }
    vllm_404 = b'{"object":"error","message":"The model x does not exist.","code":404}'
    assert json.loads(engine_error(404, vllm_404))["error"]["type"] == "not_found_error"
    assert json.loads(engine_error(500, b"oops"))["error"] == {
        "type": "api_error",
        "message": "oops",
    }
    already = b'{"type":"error","error":{"type":"overloaded_error","message":"x"}}'
    assert engine_error(529, already) == already


def test_an_engines_own_anthropic_stream_is_counted_whole() -> None:
    """llama-server's /v1/messages stream: the prompt in message_start, the output in
    message_delta; the relay hands on both, and the counter adds the cache read."""
    events = [
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":'
        b'{"cache_read_input_tokens":4,"input_tokens":9,"output_tokens":0}}}\n\n',
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"hi"}}\n\n',
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":'
        b'"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}\n\n',
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ]
    seen: list[Any] = []
    out = asyncio.run(_collect(relay(_items(events), forward_usage=False, on_usage=seen.append)))
    assert out == b"".join(events)
    assert seen == [{"cache_read_input_tokens": 4, "input_tokens": 9, "output_tokens": 7}]
    counter = UsageCounter()
    counter.record("i", seen[0], "anthropic/passthrough")
    counted = counter.get("i")
    assert (counted.prompt_tokens, counted.completion_tokens) == (13, 7)
    assert counted.by_api == {"anthropic/passthrough": 1}


@pytest.mark.parametrize("kind", shapes.KINDS)
@pytest.mark.parametrize("shape", shapes.SHAPES)
def test_each_engines_recorded_stream_and_reply_translate_alike(shape: str, kind: str) -> None:
    """The stand-in's recorded bytes of each engine (tests/fixtures/engine_shapes), streamed
    and whole, make the same Anthropic message, with the engine's reasoning, text, call and
    counts."""
    streamed = check_stream(parse_sse(_convert([shapes.stream_bytes(shape, kind)])))
    whole = from_chat(shapes.whole_bytes(shape, kind), "client-name", [])
    anthropic.types.Message.model_validate(whole)
    for message in (streamed, whole):
        kinds = [b["type"] for b in message["content"]]
        expected = {
            "tool": ["tool_use"],
            "reasoning": ["thinking", "text"],
            "reasoning_tool": ["thinking", "tool_use"],
        }[kind]
        assert kinds == expected, (shape, kind, message["content"])
        if "thinking" in kinds:
            assert message["content"][0]["thinking"] == shapes.REASONING
        if "tool_use" in kinds:
            use = message["content"][-1]
            assert (use["name"], use["input"]) == (shapes.TOOL_NAME, shapes.ARGUMENTS)
            assert use["id"] and message["stop_reason"] == "tool_use"
        else:
            assert message["content"][-1]["text"].startswith(shapes.CONTENT[:20])
    assert streamed["content"] == whole["content"]
    assert streamed["usage"] == whole["usage"]
    usage = shapes.stream_events(shape, kind)[-1]["usage"]
    assert streamed["usage"]["output_tokens"] == usage["completion_tokens"]
    assert streamed["usage"]["input_tokens"] == usage["prompt_tokens"]


def test_claude_codes_changing_billing_checksum_is_held_fixed() -> None:
    """So that the engine's prompt cache holds from one turn to the next (llama.cpp#21793)."""
    system = [
        {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.3; cch=1c8b4; x"},
        {"type": "text", "text": "You are Claude Code. cch=abcde stays."},
    ]
    chat = to_chat(_body(system=system))
    assert chat["messages"][0]["content"] == (
        "x-anthropic-billing-header: cc_version=2.1.3; cch=fffff; x\n"
        "You are Claude Code. cch=abcde stays."
    )


def test_a_tool_results_own_blocks_may_be_of_any_type_but_images_are_checked() -> None:
    inner = [
        {"type": "tool_reference", "tool_name": "grep"},
        {"type": "text", "text": "found"},
        "a stray string",
    ]
    result = {"type": "tool_result", "tool_use_id": "t", "content": inner}
    body = _body(messages=[{"role": "user", "content": [result]}])
    assert screen_messages(body, []) == []
    assert to_chat(body)["messages"] == [{"role": "tool", "tool_call_id": "t", "content": "found"}]
    sourceless = {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "image"}]}
    with pytest.raises(BadRequest, match="needs a source"):
        screen_messages(_body(messages=[{"role": "user", "content": [sourceless]}]), [])
    with pytest.raises(BadRequest, match="needs a source"):
        screen_messages(_body(messages=[{"role": "user", "content": [{"type": "image"}]}]), [])
