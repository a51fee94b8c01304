"""Ollama's API translated to and from chat completions, on bytes llama.cpp, vLLM and SGLang
really send (tests/fixtures/engine_shapes): thinking from the engine's reasoning, tool calls
joined from argument pieces by index, counts from the engine's usage; and Ollama's requests
(tool results, think, format, options, images, generate, embed) as the engine gets them."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from roundhouse.core.gateway.errors import BadRequest
from roundhouse.core.gateway.ollama import request
from roundhouse.core.gateway.ollama.reply import Clock, engine_error, whole_chat, whole_embed
from roundhouse.core.gateway.ollama.stream import to_ndjson
from roundhouse.core.gateway.ollama.surface import OllamaSurface
from roundhouse.core.gateway.sse import relay
from tests.fixtures import engine_shapes as shapes

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32).decode()


def _usage(shape: str, kind: str) -> dict[str, int]:
    return next(e["usage"] for e in shapes.stream_events(shape, kind) if e.get("usage"))


async def _pieces(raw: bytes, size: int) -> AsyncIterator[bytes]:
    for start in range(0, len(raw), size):
        yield raw[start : start + size]


def _stream(
    raw: bytes, *, size: int = 7, generate: bool = False, hide: bool = False
) -> list[dict[str, Any]]:
    """The NDJSON lines the gateway sends for an engine's SSE body cut into `size` bytes."""

    async def run() -> bytes:
        events = relay(_pieces(raw, size), forward_usage=True, on_usage=lambda _u: None)
        convert = to_ndjson("m", Clock(Clock.now(), Clock.now()), generate, hide)
        return b"".join([chunk async for chunk in convert(events)])

    out = asyncio.run(run())
    assert out.endswith(b"\n")
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize("shape", shapes.SHAPES)
@pytest.mark.parametrize("kind", shapes.KINDS)
@pytest.mark.parametrize("size", [1, 7, 4096])
def test_a_stream_becomes_ollamas_lines(shape: str, kind: str, size: int) -> None:
    lines = _stream(shapes.stream_bytes(shape, kind), size=size)
    *parts, last = lines
    assert all(line["done"] is False for line in parts) and last["done"] is True
    assert all(line["model"] == "m" and line["created_at"].endswith("Z") for line in lines)
    thinking = "".join(p["message"].get("thinking", "") for p in parts)
    content = "".join(p["message"]["content"] for p in parts)
    calls = [c for p in parts for c in p["message"].get("tool_calls", [])]
    if "reasoning" in kind:
        assert thinking == shapes.REASONING
    else:
        assert thinking == ""
    if "tool" in kind:
        # Given whole, once, its arguments an object, as Ollama gives them.
        assert len(calls) == 1
        assert calls[0]["function"]["name"] == shapes.TOOL_NAME
        assert calls[0]["function"]["arguments"] == shapes.ARGUMENTS
        assert calls[0]["id"]
        assert content == ""
    else:
        assert calls == [] and content == shapes.CONTENT
    usage = _usage(shape, kind)
    assert last["prompt_eval_count"] == usage["prompt_tokens"]
    assert last["eval_count"] == usage["completion_tokens"]
    assert (
        last["done_reason"] == ("stop" if "tool" in kind else "length")
        or last["done_reason"] == "stop"
    )
    for name in ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration"):
        assert isinstance(last[name], int) and last[name] >= 0, name


@pytest.mark.parametrize("shape", shapes.SHAPES)
@pytest.mark.parametrize("kind", shapes.KINDS)
def test_a_whole_reply_becomes_ollamas(shape: str, kind: str) -> None:
    body = shapes.whole(shape, kind)
    clock = Clock(Clock.now(), Clock.now())
    out = whole_chat(
        shapes.whole_bytes(shape, kind), "m", clock, generate=False, hide_thinking=False
    )
    message = out["message"]
    assert out["done"] is True and message["role"] == "assistant"
    if "reasoning" in kind:
        assert message["thinking"] == shapes.REASONING
    if "tool" in kind:
        (call,) = message["tool_calls"]
        assert call["function"] == {
            "index": 0,
            "name": shapes.TOOL_NAME,
            "arguments": shapes.ARGUMENTS,
        }
        assert call["id"] == body["choices"][0]["message"]["tool_calls"][0]["id"]
        assert out["done_reason"] == "stop"
    else:
        assert message["content"] == shapes.CONTENT
    assert out["prompt_eval_count"] == body["usage"]["prompt_tokens"]
    assert out["eval_count"] == body["usage"]["completion_tokens"]
    timings = body.get("timings")
    if timings:  # llama-server's own durations, in nanoseconds
        assert out["eval_duration"] == int(timings["predicted_ms"] * 1_000_000)
    generated = whole_chat(
        shapes.whole_bytes(shape, kind), "m", clock, generate=True, hide_thinking=True
    )
    assert "message" not in generated and "thinking" not in generated
    assert generated["response"] == ("" if "tool" in kind else shapes.CONTENT)


def test_think_false_shows_no_thinking_streamed() -> None:
    lines = _stream(shapes.stream_bytes("llamacpp", "reasoning"), hide=True)
    assert not any("thinking" in line.get("message", {}) for line in lines)
    assert "".join(line["message"]["content"] for line in lines) == shapes.CONTENT


def test_generate_streams_response_and_thinking() -> None:
    lines = _stream(shapes.stream_bytes("sglang", "reasoning"), generate=True)
    assert "".join(line.get("thinking", "") for line in lines) == shapes.REASONING
    assert "".join(line["response"] for line in lines) == shapes.CONTENT
    assert lines[-1]["done"] is True and "message" not in lines[-1]


def test_a_broken_stream_ends_with_an_error_line_and_no_done() -> None:
    raw = shapes.stream_bytes("vllm", "reasoning").split(b"\n\n")
    broken = b"\n\n".join(raw[:3]) + b'\n\ndata: {"error": {"message": "engine died"}}\n\n'
    lines = _stream(broken)
    assert lines[-1] == {"error": "engine died"}
    assert not any(line.get("done") for line in lines)


def test_a_tool_round_trip_reaches_the_engine_as_chat_expects() -> None:
    """Ollama's calls carry no id and object arguments; its tool results name the tool."""
    body: dict[str, Any] = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {
                "role": "assistant",
                "content": "",
                "thinking": "Two calls.",
                "tool_calls": [
                    {"function": {"name": "get_weather", "arguments": {"location": "Paris"}}},
                    {"function": {"name": "get_time", "arguments": {"city": "Rome"}}},
                ],
            },
            {"role": "tool", "tool_name": "get_time", "content": "noon"},
            {"role": "tool", "content": "18 C"},
        ],
        "tools": shapes.TOOLS,
    }
    out = request.chat(body).body
    assistant, time_result, weather_result = out["messages"][1:]
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert len(set(ids)) == 2
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"location": "Paris"}
    assert assistant["reasoning_content"] == "Two calls."
    assert time_result == {"role": "tool", "tool_call_id": ids[1], "content": "noon"}
    assert weather_result == {"role": "tool", "tool_call_id": ids[0], "content": "18 C"}
    assert out["tools"] == shapes.TOOLS
    # A client that sends the id back (newer Ollama clients) is matched by it.
    body["messages"][1]["tool_calls"][0]["id"] = "call_x"
    body["messages"][2] = {"role": "tool", "tool_call_id": "call_x", "content": "18 C"}
    again = request.chat(body).body["messages"]
    assert again[2]["tool_call_id"] == "call_x"
    with pytest.raises(BadRequest, match="no tool call before it"):
        request.chat({"model": "m", "messages": [{"role": "tool", "content": "x"}]})


def test_options_format_think_and_images_are_mapped() -> None:
    translated = request.chat(
        {
            "model": "m",
            "messages": [{"role": "user", "content": "Describe.", "images": [PNG]}],
            "options": {
                "temperature": 0.1,
                "top_k": 5,
                "num_predict": 9,
                "seed": 3,
                "stop": ["x"],
                "num_ctx": 9000,
            },
            "format": {"type": "object", "properties": {"a": {"type": "string"}}},
            "think": "high",
            "keep_alive": "5m",
            "stream": False,
        }
    )
    body = translated.body
    assert body["temperature"] == 0.1 and body["top_k"] == 5 and body["max_tokens"] == 9
    assert body["seed"] == 3 and body["stop"] == ["x"] and body["stream"] is False
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["properties"] == {
        "a": {"type": "string"}
    }
    assert body["reasoning_effort"] == "high"
    assert body["chat_template_kwargs"] == {"enable_thinking": True}
    image, text = body["messages"][0]["content"]
    assert image["image_url"]["url"] == f"data:image/png;base64,{PNG}"
    assert text == {"type": "text", "text": "Describe."}
    assert set(translated.dropped) == {"options.num_ctx", "keep_alive"}
    plain = request.chat({"model": "m", "messages": [], "format": "json", "think": False}).body
    assert plain["response_format"] == {"type": "json_object"}
    assert plain["chat_template_kwargs"] == {"enable_thinking": False} and plain["stream"] is True
    assert request.chat({"model": "m", "messages": [], "think": False}).hide_thinking
    # -1: no limit, which is the engine's own.
    assert (
        "max_tokens"
        not in request.chat({"model": "m", "messages": [], "options": {"num_predict": -1}}).body
    )


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"model": "m", "messages": [{"role": "user", "images": ["not base64!"]}]}, "not base64"),
        (
            {
                "model": "m",
                "messages": [{"role": "user", "images": [base64.b64encode(b"text").decode()]}],
            },
            "PNG",
        ),
        ({"model": "m", "messages": [], "think": "max"}, "'think'"),
        ({"model": "m", "messages": [], "format": "yaml"}, "'format'"),
        ({"model": "m", "messages": [], "options": [1]}, "'options'"),
        ({"messages": []}, "GET /api/tags"),
    ],
)
def test_bad_requests_are_said_in_words(body: dict[str, Any], words: str) -> None:
    with pytest.raises(BadRequest, match=words):
        OllamaSurface("chat").prepare(body, [])


def test_generate_and_embed_become_the_engines_requests() -> None:
    chat = request.generate({"model": "m", "prompt": "Hi", "system": "Be brief.", "images": [PNG]})
    assert chat.path == "chat/completions"
    assert chat.body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert chat.body["messages"][1]["content"][1] == {"type": "text", "text": "Hi"}
    raw = request.generate({"model": "m", "prompt": "[INST]Hi", "raw": True, "think": True})
    assert raw.path == "completions" and raw.body["prompt"] == "[INST]Hi"
    assert "chat_template_kwargs" not in raw.body
    for field in ("suffix", "template", "context"):
        with pytest.raises(BadRequest, match=field):
            request.generate(
                {"model": "m", "prompt": "a", field: "b" if field != "context" else [1]}
            )
    embed = request.embed({"model": "m", "input": "one", "dimensions": 8}, legacy=False)
    assert (
        embed.path == "embeddings"
        and embed.body["input"] == ["one"]
        and embed.body["dimensions"] == 8
    )
    legacy = request.embed({"model": "m", "prompt": "one"}, legacy=True)
    assert legacy.body["input"] == ["one"]
    with pytest.raises(BadRequest, match="'input'"):
        request.embed({"model": "m", "input": [1]}, legacy=False)


def test_embeddings_and_errors_in_ollamas_shapes() -> None:
    raw = json.dumps(
        {
            "data": [{"index": 1, "embedding": [0.2]}, {"index": 0, "embedding": [0.1]}],
            "usage": {"prompt_tokens": 4, "total_tokens": 4},
        }
    ).encode()
    clock = Clock(Clock.now(), Clock.now())
    out = whole_embed(raw, "m", clock, legacy=False)
    assert out["embeddings"] == [[0.1], [0.2]] and out["prompt_eval_count"] == 4
    assert whole_embed(raw, "m", clock, legacy=True) == {"embedding": [0.1]}
    openai_shape = json.dumps({"error": {"message": "too long", "type": "x"}}).encode()
    assert json.loads(engine_error(400, openai_shape)) == {"error": "too long"}
    assert json.loads(engine_error(500, b"plain words")) == {"error": "plain words"}
    assert json.loads(engine_error(422, json.dumps({"detail": "bad"}).encode())) == {"error": "bad"}


def test_a_latest_tag_finds_a_model_listed_without_one() -> None:
    known = {"tiny"}.__contains__
    prepared = OllamaSurface("chat", known).prepare({"model": "tiny:latest", "messages": []}, [])
    assert prepared.model == "tiny" and prepared.stream is True
    tagged = OllamaSurface("chat", {"qwen3:latest"}.__contains__)
    assert tagged.prepare({"model": "qwen3:latest", "messages": []}, []).model == "qwen3:latest"
