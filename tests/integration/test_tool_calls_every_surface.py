"""Tool calls and reasoning round trips through every client API the gateway serves, against
the strict stand-in in the shapes of llama.cpp, vLLM and SGLang (bytes those engines send),
streamed and not: the engine's call and thoughts reach the client in the client's terms, and
the client's tool result reaches the engine as a chat `tool` message after the call."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import ollama
import pytest
from anthropic import Anthropic
from openai import OpenAI

from roundhouse.api.engines import EngineId, InstanceOptions
from roundhouse.api.instances import StartRequest
from roundhouse.api.settings import EngineSettings, Settings
from tests.daemon_process import DaemonProcess, start_ready
from tests.fakes.openai_engines.shapes import ARGUMENT_PIECES, REASONING_PIECES
from tests.fixtures import engine_shapes as shapes
from tests.fixtures.chat_templates import write_model
from tests.responses_stream import check_stream, parse_sse
from tests.support.standins import daemon_with, sglang_python, vllm_standin

SHAPES = ("llamacpp", "vllm", "sglang")
QUESTION = "What is the weather in Paris?"
RESULT = "18 degrees and sunny"
# What the stand-in generates for a call: its thoughts, the name, the argument pieces.
CALL_TOKENS = len(REASONING_PIECES) + 1 + len(ARGUMENT_PIECES)
ANTHROPIC_TOOLS = [
    {
        "name": shapes.TOOL_NAME,
        "description": "The weather now in a place.",
        "input_schema": shapes.TOOLS[0]["function"]["parameters"],
    }
]


@dataclass
class Served:
    daemon: DaemonProcess
    records: dict[str, Path]  # shape: the requests its engine received (JSON lines)

    def engine_requests(self, shape: str) -> list[dict[str, Any]]:
        lines = self.records[shape].read_text(encoding="utf-8").splitlines()
        entries = [json.loads(line) for line in lines]
        return [
            json.loads(e["body"])
            for e in entries
            if e.get("path", "").endswith("/chat/completions")
        ]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One daemon with a Qwen3 instance per shape: vLLM's and SGLang's stand-ins, and the
    vLLM stand-in sending llama.cpp's bytes (so the gateway translates them as a chat
    engine's; the llama.cpp engine itself would be passed these APIs through)."""
    work = tmp_path_factory.mktemp("surfaces")
    vllm_standin(work / "bin")
    python = sglang_python(work)
    settings = Settings(models_dir=str(work / "hub"), engines=EngineSettings(python_paths=[python]))
    records = {shape: work / f"{shape}-requests.jsonl" for shape in SHAPES}
    requests = []
    for shape in SHAPES:
        folder = write_model(work / "models" / shape / "Qwen3-8B", "qwen3")
        extra = ("--record-requests", str(records[shape]))
        if shape == "llamacpp":
            extra += ("--standin-shape", "llamacpp")
        engine = EngineId.SGLANG if shape == "sglang" else EngineId.VLLM
        options = InstanceOptions(model=str(folder), served_name=f"q-{shape}", extra_args=extra)
        requests.append(StartRequest(engine=engine, options=options))
    with daemon_with(work / "home", settings, [work / "bin"]) as daemon:
        for request in requests:
            asyncio.run(start_ready(daemon, request))
        yield Served(daemon, records)


def _anthropic(served: Served) -> Anthropic:
    return Anthropic(base_url=served.daemon.url, api_key="unused", max_retries=0, timeout=60)


def _check_call_reply(content: list[Any], stop_reason: str | None, output_tokens: int) -> str:
    """The thinking block, then one tool_use with the engine's arguments; its id."""
    kinds = [block.type for block in content]
    assert kinds == ["thinking", "tool_use"], kinds
    assert content[0].thinking == shapes.REASONING
    call = content[1]
    assert call.name == shapes.TOOL_NAME
    assert call.input == shapes.ARGUMENTS
    assert stop_reason == "tool_use"
    assert output_tokens == CALL_TOKENS
    return str(call.id)


def _check_engine_saw_the_result(served: Served, shape: str, call_id: str) -> None:
    """The turn after the call reached the engine as chat completions expect it."""
    messages = served.engine_requests(shape)[-1]["messages"]
    assistant, tool = messages[-2], messages[-1]
    (call,) = assistant["tool_calls"]
    assert call["id"] == call_id
    assert call["function"]["name"] == shapes.TOOL_NAME
    assert json.loads(call["function"]["arguments"]) == shapes.ARGUMENTS
    assert tool == {"role": "tool", "tool_call_id": call_id, "content": RESULT}


@pytest.mark.parametrize("shape", SHAPES)
def test_anthropic_messages_tool_round_trip_whole(served: Served, shape: str) -> None:
    client = _anthropic(served)
    question = [{"role": "user", "content": QUESTION}]
    raw = client.messages.with_raw_response.create(
        model=f"q-{shape}",
        max_tokens=256,
        tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
        messages=question,  # type: ignore[arg-type]
    )
    # These engines serve no /v1/messages: the gateway translated both ways.
    assert raw.headers["x-roundhouse-path"] == "translated"
    first = raw.parse()
    call_id = _check_call_reply(first.content, first.stop_reason, first.usage.output_tokens)
    result = {"type": "tool_result", "tool_use_id": call_id, "content": RESULT}
    second = client.messages.create(
        model=f"q-{shape}",
        max_tokens=256,
        tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
        messages=[
            *question,
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {"role": "user", "content": [result]},
        ],  # type: ignore[arg-type]
    )
    assert [b.type for b in second.content] == ["thinking", "text"]
    assert second.content[1].text == shapes.CONTENT  # type: ignore[union-attr]
    assert second.stop_reason == "end_turn"
    _check_engine_saw_the_result(served, shape, call_id)


@pytest.mark.parametrize("shape", SHAPES)
def test_anthropic_messages_tool_round_trip_streamed(served: Served, shape: str) -> None:
    client = _anthropic(served)
    question = [{"role": "user", "content": QUESTION}]
    with client.messages.stream(
        model=f"q-{shape}",
        max_tokens=256,
        tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
        messages=question,  # type: ignore[arg-type]
    ) as stream:
        raw = [event.type for event in stream]
        first = stream.get_final_message()
    events = [t for t in raw if t.startswith(("message_", "content_block_"))]
    # One block at a time, each closed before the next; the message ends once.
    assert events[0] == "message_start" and events[-2:] == ["message_delta", "message_stop"]
    blocks = [t for t in events if t in ("content_block_start", "content_block_stop")]
    assert blocks == ["content_block_start", "content_block_stop"] * 2
    call_id = _check_call_reply(first.content, first.stop_reason, first.usage.output_tokens)
    result = {"type": "tool_result", "tool_use_id": call_id, "content": RESULT}
    with client.messages.stream(
        model=f"q-{shape}",
        max_tokens=256,
        tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
        messages=[
            *question,
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {"role": "user", "content": [result]},
        ],  # type: ignore[arg-type]
    ) as stream:
        second = stream.get_final_message()
    assert [b.type for b in second.content] == ["thinking", "text"]
    assert second.content[0].thinking == shapes.REASONING  # type: ignore[union-attr]
    assert second.content[1].text == shapes.CONTENT  # type: ignore[union-attr]
    assert second.stop_reason == "end_turn"
    _check_engine_saw_the_result(served, shape, call_id)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_openai_chat_tool_round_trip(served: Served, shape: str, stream: bool) -> None:
    client = OpenAI(base_url=served.daemon.url + "/v1", api_key="unused", max_retries=0)
    question: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    field = "reasoning" if shape == "vllm" else "reasoning_content"
    if stream:
        chunks = list(
            client.chat.completions.create(
                model=f"q-{shape}",
                messages=question,  # type: ignore[arg-type]
                tools=shapes.TOOLS,  # type: ignore[arg-type]
                stream=True,
            )
        )
        deltas = [c.choices[0].delta for c in chunks if c.choices]
        calls = [call for d in deltas for call in d.tool_calls or []]
        call_id = next(c.id for c in calls if c.id)
        arguments = "".join(c.function.arguments or "" for c in calls if c.function)
        reasoning = "".join((d.model_extra or {}).get(field) or "" for d in deltas)
        finish = [c.choices[0].finish_reason for c in chunks if c.choices][-1]
    else:
        whole = client.chat.completions.create(
            model=f"q-{shape}",
            messages=question,  # type: ignore[arg-type]
            tools=shapes.TOOLS,  # type: ignore[arg-type]
        )
        message = whole.choices[0].message
        assert message.tool_calls is not None
        call_id = message.tool_calls[0].id
        arguments = message.tool_calls[0].function.arguments  # type: ignore[union-attr]
        reasoning = (message.model_extra or {})[field]
        finish = whole.choices[0].finish_reason
    assert json.loads(arguments) == shapes.ARGUMENTS
    assert reasoning == shapes.REASONING
    assert finish == "tool_calls"
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": shapes.TOOL_NAME, "arguments": arguments},
    }
    answer = client.chat.completions.create(
        model=f"q-{shape}",
        messages=[
            *question,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": RESULT},
        ],  # type: ignore[arg-type]
        tools=shapes.TOOLS,  # type: ignore[arg-type]
    )
    assert answer.choices[0].message.content == shapes.CONTENT
    assert answer.choices[0].finish_reason == "stop"
    _check_engine_saw_the_result(served, shape, call_id)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_ollama_chat_tool_round_trip(served: Served, shape: str, stream: bool) -> None:
    """The official `ollama` client: the call whole with its arguments an object, the
    thinking in `message.thinking`, the counts the engine's; the result sent back as a
    "tool" message naming the tool reaches the engine tied to the call's id."""
    client = ollama.Client(host=served.daemon.url, timeout=60)
    question = [{"role": "user", "content": QUESTION}]
    if stream:
        parts = list(
            client.chat(model=f"q-{shape}", messages=question, tools=shapes.TOOLS, stream=True)
        )
        assert [p.done for p in parts].count(True) == 1 and parts[-1].done
        calls = [c for p in parts for c in p.message.tool_calls or []]
        thinking = "".join(p.message.thinking or "" for p in parts)
        last = parts[-1]
    else:
        last = client.chat(model=f"q-{shape}", messages=question, tools=shapes.TOOLS)
        calls = list(last.message.tool_calls or [])
        thinking = last.message.thinking or ""
    (call,) = calls
    assert call.function.name == shapes.TOOL_NAME
    assert dict(call.function.arguments) == shapes.ARGUMENTS
    assert thinking == shapes.REASONING
    assert last.done_reason == "stop" and last.eval_count == CALL_TOKENS
    answer = client.chat(
        model=f"q-{shape}",
        messages=[
            *question,
            {"role": "assistant", "content": "", "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_name": shapes.TOOL_NAME, "content": RESULT},
        ],
        tools=shapes.TOOLS,
        stream=stream,
    )
    if stream:
        answer_parts = list(answer)  # type: ignore[arg-type]
        text = "".join(p.message.content or "" for p in answer_parts)
    else:
        text = answer.message.content  # type: ignore[union-attr]
    assert text == shapes.CONTENT
    messages = served.engine_requests(shape)[-1]["messages"]
    assistant, tool = messages[-2], messages[-1]
    (sent,) = assistant["tool_calls"]
    assert sent["function"]["name"] == shapes.TOOL_NAME
    assert json.loads(sent["function"]["arguments"]) == shapes.ARGUMENTS
    assert tool == {"role": "tool", "tool_call_id": sent["id"], "content": RESULT}


RESPONSES_TOOLS = [
    {
        "type": "function",
        "name": shapes.TOOL_NAME,
        "description": "The weather now in a place.",
        "parameters": shapes.TOOLS[0]["function"]["parameters"],
    }
]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_openai_responses_tool_round_trip(served: Served, shape: str, stream: bool) -> None:
    """The official `openai` client's Responses API: the engine's thoughts as a reasoning
    item, its call as a function_call item (streamed: every event checked, and the SDK's
    own `responses.stream()` rebuilding the response); the output sent back with the
    function_call_output reaches the engine as the call and a `tool` message, and
    previous_response_id does the same from the daemon's store."""
    client = OpenAI(base_url=served.daemon.url + "/v1", api_key="unused", max_retries=0)
    model = f"q-{shape}"
    if stream:
        body = {"model": model, "input": QUESTION, "tools": RESPONSES_TOOLS, "stream": True}
        raw = httpx.post(served.daemon.url + "/v1/responses", json=body, timeout=60)
        assert raw.status_code == 200, raw.text
        # These engines serve no /v1/responses here: the gateway translated both ways.
        assert raw.headers["x-roundhouse-path"] == "translated"
        check_stream(parse_sse(raw.content))
        with client.responses.stream(
            model=model,
            input=QUESTION,
            tools=RESPONSES_TOOLS,  # type: ignore[arg-type]
        ) as events:
            first = events.get_final_response()
    else:
        first = client.responses.create(
            model=model,
            input=QUESTION,
            tools=RESPONSES_TOOLS,  # type: ignore[arg-type]
        )
    assert [item.type for item in first.output] == ["reasoning", "function_call"]
    thought, call = first.output
    assert thought.content[0].text == shapes.REASONING  # type: ignore[union-attr,index]
    assert call.name == shapes.TOOL_NAME  # type: ignore[union-attr]
    assert json.loads(call.arguments) == shapes.ARGUMENTS  # type: ignore[union-attr]
    assert first.status == "completed"
    assert first.usage is not None and first.usage.output_tokens == CALL_TOKENS
    call_id = call.call_id  # type: ignore[union-attr]
    output = {"type": "function_call_output", "call_id": call_id, "output": RESULT}
    answer = client.responses.create(
        model=model,
        input=[
            {"role": "user", "content": QUESTION},
            *[item.model_dump(exclude_none=True) for item in first.output],
            output,
        ],  # type: ignore[arg-type]
        tools=RESPONSES_TOOLS,  # type: ignore[arg-type]
    )
    assert answer.output_text == shapes.CONTENT
    _check_engine_saw_the_result(served, shape, call_id)
    chained = client.responses.create(
        model=model,
        previous_response_id=first.id,
        input=[output],  # type: ignore[list-item]
        tools=RESPONSES_TOOLS,  # type: ignore[arg-type]
    )
    assert chained.output_text == shapes.CONTENT
    _check_engine_saw_the_result(served, shape, call_id)
