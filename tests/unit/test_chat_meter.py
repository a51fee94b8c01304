"""Reading OpenAI stream chunks (content, both spellings of reasoning, usage, errors) and the
figures of a reply, on an injected clock."""

from __future__ import annotations

import json
from typing import Any

from roundhouse.api.chat import Message, ReplyStats, Role, SamplingParams
from roundhouse.core.chat.meter import Chunk, ReplyMeter, error_message, parse_chunk
from roundhouse.core.chat.turns import history_messages, request_body
from tests.support.clock import Clock


def chunk(delta: dict[str, Any] | None = None, **extra: Any) -> str:
    body: dict[str, Any] = {"object": "chat.completion.chunk", **extra}
    if delta is not None:
        body["choices"] = [{"index": 0, "delta": delta, "finish_reason": None}]
    return json.dumps(body)


def test_content_and_reasoning_in_either_spelling() -> None:
    assert parse_chunk(chunk({"content": "Hi"})) == Chunk(content="Hi")
    assert parse_chunk(chunk({"reasoning_content": "hmm"})) == Chunk(reasoning="hmm")
    assert parse_chunk(chunk({"reasoning": "so", "content": None})) == Chunk(reasoning="so")
    assert parse_chunk(chunk({"role": "assistant"})) == Chunk()


def test_finish_reason_and_the_usage_chunk() -> None:
    done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    assert parse_chunk(json.dumps(done)).finish_reason == "stop"
    usage = parse_chunk(chunk(None, choices=[], usage={"prompt_tokens": 7, "completion_tokens": 3}))
    assert (usage.prompt_tokens, usage.completion_tokens) == (7, 3)


def test_errors_in_every_shape_become_words() -> None:
    openai = {"error": {"message": "model not found", "type": "invalid_request_error"}}
    assert parse_chunk(json.dumps(openai)).error == "model not found"
    assert parse_chunk(json.dumps({"error": "boom"})).error == "boom"
    assert error_message({"title": "Unauthorized", "detail": "A valid token"}) == "A valid token"
    assert error_message({"choices": []}) is None
    broken = parse_chunk("{not json")
    assert broken.error is not None and "not JSON" in broken.error


def test_figures_use_the_usage_chunk_when_there_is_one() -> None:
    clock = Clock()
    meter = ReplyMeter("tiny", clock=clock)
    meter.read_headers({"x-roundhouse-engine": "llama.cpp", "x-roundhouse-instance": "ab12"})
    clock.now = 100.25
    meter.add(Chunk(content="a"))
    for _ in range(4):
        clock.now += 0.5
        meter.add(Chunk(content="b"))
    meter.add(Chunk(finish_reason="stop"))
    meter.add(Chunk(prompt_tokens=9, completion_tokens=9))
    clock.now += 1
    meter.end()
    stats = meter.stats()
    assert stats == ReplyStats(
        model="tiny",
        engine="llama.cpp",
        instance="ab12",
        ttft_ms=250.0,
        prompt_tokens=9,
        completion_tokens=9,
        tokens_per_s=4.0,  # 8 tokens after the first, in 2 s
        duration_s=3.25,
        finish_reason="stop",
    )


def test_without_usage_each_text_chunk_counts_and_a_stop_is_marked() -> None:
    clock = Clock()
    meter = ReplyMeter("tiny", clock=clock)
    clock.now = 100.1
    meter.add(Chunk(reasoning="think"))
    clock.now = 101.1
    meter.add(Chunk(content="x"))
    meter.add(Chunk())  # no text: not a token
    stats = meter.stats(stopped=True)
    assert stats.completion_tokens == 2 and stats.tokens_per_s == 1.0
    assert stats.stopped and stats.engine is None and stats.prompt_tokens is None
    assert ReplyMeter("m", clock=clock).stats(error="down").ttft_ms is None


def test_the_request_carries_only_the_parameters_set() -> None:
    body = request_body("m", [{"role": "user", "content": "hi"}], SamplingParams(top_p=0.5))
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "top_p": 0.5,
    }


def test_history_sends_the_system_prompt_and_leaves_failed_replies_out() -> None:
    def message(role: Role, content: str, error: str | None = None) -> Message:
        stats = ReplyStats(error=error) if error else None
        return Message(id=1, created_at=0, role=role, content=content, stats=stats)

    sent = history_messages(
        "Be brief.",
        [
            message(Role.USER, "hi"),
            message(Role.ASSISTANT, "", error="engine down"),
            message(Role.USER, "hi again"),
            message(Role.ASSISTANT, "hello"),
        ],
    )
    assert [m["role"] for m in sent] == ["system", "user", "user", "assistant"]
    assert history_messages("  ", []) == []
