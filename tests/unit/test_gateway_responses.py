"""The Responses API's translation to and from chat completions (requests, whole replies and
streams in the bytes llama.cpp, vLLM and SGLang send), an engine's own Responses stream made
whole, and the store behind previous_response_id."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from openai import OpenAI

from roundhouse.core.gateway.errors import BadRequest, ContextTooLong
from roundhouse.core.gateway.fields import FieldRefused, MediaRefused
from roundhouse.core.gateway.responses.passthrough import normalize
from roundhouse.core.gateway.responses.reply import from_chat, gateway_error
from roundhouse.core.gateway.responses.request import screen_responses, to_chat
from roundhouse.core.gateway.responses.store import ResponseStore
from roundhouse.core.gateway.responses.stream import chat_to_responses
from roundhouse.core.gateway.responses.surface import (
    PreviousResponseNotFound,
    ResponsesPrepared,
    ResponsesSurface,
)
from roundhouse.core.gateway.sse import relay
from tests.fixtures import engine_shapes as shapes
from tests.responses_stream import check_stream, parse_sse

ALLOWED = ("allowed.com",)
KINDS = shapes.KINDS


def _translate(body: dict[str, Any]) -> dict[str, Any]:
    screen_responses(body, ALLOWED)
    return to_chat(body)


# -- requests ----------------------------------------------------------------------------------


def test_instructions_and_a_string_input_become_system_and_user() -> None:
    chat = _translate(
        {"model": "m", "instructions": "Be terse.", "input": "Hi.", "max_output_tokens": 7}
    )
    assert chat["messages"] == [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Hi."},
    ]
    assert chat["max_tokens"] == 7


def test_items_with_calls_outputs_reasoning_and_images() -> None:
    body = {
        "model": "m",
        "input": [
            {"role": "developer", "content": "Use tools."},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Weather here?"},
                    {"type": "input_image", "image_url": "https://allowed.com/a.png"},
                ],
            },
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [],
                "content": [{"type": "reasoning_text", "text": "Look it up."}],
            },
            {"type": "function_call", "call_id": "c1", "name": "w", "arguments": '{"a":1}'},
            {"type": "function_call", "call_id": "c2", "name": "w", "arguments": '{"a":2}'},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            {
                "type": "function_call_output",
                "call_id": "c2",
                "output": [{"type": "input_text", "text": "rain"}],
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Sunny and rain."}],
            },
        ],
        "tools": [{"type": "function", "name": "w", "parameters": {"type": "object"}}],
        "tool_choice": {"type": "function", "name": "w"},
        "parallel_tool_calls": False,
        "text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}}},
        "temperature": 0.5,
    }
    chat = _translate(body)
    assert chat["messages"] == [
        {"role": "system", "content": "Use tools."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Weather here?"},
                {"type": "image_url", "image_url": {"url": "https://allowed.com/a.png"}},
            ],
        },
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "Look it up.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "w", "arguments": '{"a":1}'}},
                {"id": "c2", "type": "function", "function": {"name": "w", "arguments": '{"a":2}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": "rain"},
        {"role": "assistant", "content": "Sunny and rain."},
    ]
    assert chat["tools"] == [
        {"type": "function", "function": {"name": "w", "parameters": {"type": "object"}}}
    ]
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "w"}}
    assert chat["parallel_tool_calls"] is False
    assert chat["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "out", "schema": {"type": "object"}},
    }
    assert chat["temperature"] == 0.5


def test_unknown_fields_are_dropped_and_named_refused_ones_refused() -> None:
    body = {"model": "m", "input": "x", "weird": 1, "top_k": 3}
    assert sorted(screen_responses(body, ALLOWED)) == ["top_k", "weird"]
    assert "weird" not in body
    for name, value in (("id_slot", 1), ("conversation", "c"), ("prompt", {"id": "p"})):
        with pytest.raises(FieldRefused) as refused:
            screen_responses({"model": "m", "input": "x", name: value}, ALLOWED)
        assert refused.value.param == name
    with pytest.raises(FieldRefused):
        screen_responses({"model": "m", "input": "x", "background": True}, ALLOWED)


@pytest.mark.parametrize(
    "tool", [{"type": "web_search"}, {"type": "file_search"}, {"type": "mcp", "server_url": "x"}]
)
def test_built_in_tools_are_refused_saying_what_to_send(tool: dict[str, Any]) -> None:
    with pytest.raises(BadRequest) as refused:
        screen_responses({"model": "m", "input": "x", "tools": [tool]}, ALLOWED)
    assert "function tool" in refused.value.message


def test_media_on_a_host_not_allowed_and_server_items_are_refused() -> None:
    image = {"type": "input_image", "image_url": "http://169.254.169.254/a.png"}
    with pytest.raises(MediaRefused):
        screen_responses({"model": "m", "input": [{"role": "user", "content": [image]}]}, ALLOWED)
    with pytest.raises(BadRequest) as refused:
        screen_responses(
            {"model": "m", "input": [{"type": "item_reference", "id": "msg_1"}]}, ALLOWED
        )
    assert "item_reference" in refused.value.message


def test_the_context_budget_names_the_responses_fields() -> None:
    exc = ContextTooLong(
        "This request needs 10 prompt tokens plus max_tokens 900 ...",
        prompt_tokens=10,
        max_tokens=900,
        context=512,
        param="max_tokens",
    )
    error = gateway_error(exc)["error"]
    assert error["param"] == "max_output_tokens"
    assert "max_output_tokens 900" in error["message"]
    assert error["code"] == "context_length_exceeded"


# -- replies, in each engine's bytes -------------------------------------------------------------


def _expected_items(shape: str, kind: str) -> list[tuple[str, str]]:
    message = shapes.whole(shape, kind)["choices"][0]["message"]
    items = []
    if message.get("reasoning_content") or message.get("reasoning"):
        items.append(("reasoning", shapes.REASONING))
    if message.get("content"):
        items.append(("message", message["content"]))
    for call in message.get("tool_calls") or []:
        items.append(("function_call", call["function"]["arguments"]))
    return items


def _said(item: dict[str, Any]) -> tuple[str, str]:
    if item["type"] == "function_call":
        return ("function_call", item["arguments"])
    return (item["type"], "".join(p["text"] for p in item["content"]))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", shapes.SHAPES)
def test_a_whole_reply_in_each_engines_shape(shape: str, kind: str) -> None:
    engine = shapes.whole(shape, kind)
    done = from_chat(shapes.whole_bytes(shape, kind), {"model": "m"}, "m")
    assert done["object"] == "response" and done["id"].startswith("resp_")
    assert [_said(i) for i in done["output"]] == _expected_items(shape, kind)
    assert done["status"] == "completed"
    assert done["usage"]["input_tokens"] == engine["usage"]["prompt_tokens"]
    assert done["usage"]["output_tokens"] == engine["usage"]["completion_tokens"]
    for item in done["output"]:
        if item["type"] == "function_call":
            assert item["name"] == shapes.TOOL_NAME and item["call_id"]


def test_a_reply_cut_at_max_output_tokens_is_incomplete() -> None:
    engine = shapes.whole("vllm", "reasoning")
    engine["choices"][0]["finish_reason"] = "length"
    done = from_chat(json.dumps(engine).encode(), {"model": "m"}, "m")
    assert done["status"] == "incomplete"
    assert done["incomplete_details"] == {"reason": "max_output_tokens"}


async def _chunks(raw: bytes, size: int = 37) -> AsyncIterator[bytes]:
    for i in range(0, len(raw), size):
        yield raw[i : i + size]


async def _convert(raw: bytes, kept: list[dict[str, Any]]) -> bytes:
    events = relay(_chunks(raw), forward_usage=True, on_usage=lambda _: None)
    convert = chat_to_responses({"model": "m"}, "m", kept.append)
    return b"".join([chunk async for chunk in convert(events)])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", shapes.SHAPES)
def test_a_stream_in_each_engines_shape_is_a_valid_sequence(shape: str, kind: str) -> None:
    kept: list[dict[str, Any]] = []
    out = asyncio.run(_convert(shapes.stream_bytes(shape, kind), kept))
    final = check_stream(parse_sse(out))
    assert [_said(i) for i in final["output"]] == _expected_items(shape, kind)
    usage = [e["usage"] for e in shapes.stream_events(shape, kind) if e.get("usage")][-1]
    assert final["usage"]["input_tokens"] == usage["prompt_tokens"]
    assert final["usage"]["output_tokens"] == usage["completion_tokens"]
    assert kept == [final]


def _second_call(chunk: dict[str, Any]) -> dict[str, Any]:
    """`chunk` (a tool-call delta in an engine's bytes) as the same engine says a second call:
    index 1, its own id, other arguments."""
    second = json.loads(json.dumps(chunk))
    for call in second["choices"][0]["delta"]["tool_calls"]:
        call["index"] = 1
        if isinstance(call.get("id"), str):
            call["id"] += "b"
        function = call.get("function") or {}
        if isinstance(function.get("arguments"), str):
            function["arguments"] = function["arguments"].replace("Paris", "Lyon")
    return second


def _two_calls(shape: str, *, together: bool) -> bytes:
    """The engine's recorded reasoning and call, then a second call by index 1 (after the
    first, as llama.cpp, vLLM and SGLang send parallel calls; or `together`, each delta of
    both calls in one chunk), in its own bytes."""
    events = shapes.stream_events(shape, "reasoning_tool")
    calls = [i for i, e in enumerate(events) if (e.get("choices") or [{}])[0].get("delta", {})
             .get("tool_calls")]  # fmt: skip
    if together:
        for i in calls:
            delta = events[i]["choices"][0]["delta"]
            delta["tool_calls"] += _second_call(events[i])["choices"][0]["delta"]["tool_calls"]
    else:
        seconds = [_second_call(events[i]) for i in calls]
        events[calls[-1] + 1 : calls[-1] + 1] = seconds
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return body + b"data: [DONE]\n\n"


def _sdk_final(raw: bytes) -> dict[str, Any]:
    """The response the openai client's `responses.stream()` rebuilds from a stream's bytes
    (served as an HTTP reply to it)."""
    reply = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=raw)
    transport = httpx.MockTransport(lambda _: reply)
    with (
        OpenAI(
            base_url="http://gateway.invalid/v1",
            api_key="k",
            http_client=httpx.Client(transport=transport),
        ) as client,
        client.responses.stream(model="m", input="x") as stream,
    ):
        for _ in stream:
            pass
        return stream.get_final_response().model_dump(mode="json", exclude_none=True)


@pytest.mark.parametrize("together", [False, True])
@pytest.mark.parametrize("shape", shapes.SHAPES)
def test_several_calls_by_index_become_function_call_items_in_order(
    shape: str, together: bool
) -> None:
    raw = asyncio.run(_convert(_two_calls(shape, together=together), []))
    events = parse_sse(raw)
    final = check_stream(events)
    if not together:
        # One after another, as OpenAI streams them: the first call is done before the next
        # is added.
        order = [
            (e["type"].rsplit(".", 1)[-1], e["output_index"])
            for e in events
            if e["type"] in ("response.output_item.added", "response.output_item.done")
        ]
        assert order == [
            ("added", 0),
            ("done", 0),
            ("added", 1),
            ("done", 1),
            ("added", 2),
            ("done", 2),
        ]
    # The openai client rebuilds the same response from these bytes.
    assert _sdk_final(raw)["output"] == final["output"]
    assert [i["type"] for i in final["output"]] == ["reasoning", "function_call", "function_call"]
    first, second = final["output"][1:]
    assert json.loads(first["arguments"]) == shapes.ARGUMENTS
    assert json.loads(second["arguments"]) == {**shapes.ARGUMENTS, "location": "Lyon, France"}
    assert first["name"] == second["name"] == shapes.TOOL_NAME
    assert first["call_id"] and second["call_id"] and first["call_id"] != second["call_id"]
    assert final["output"][0]["content"][0]["text"] == shapes.REASONING
    # Sent back whole, both calls are one assistant turn, each output its tool message.
    outputs = [
        {"type": "function_call_output", "call_id": c["call_id"], "output": "ok"}
        for c in (first, second)
    ]
    chat = _translate({"model": "m", "input": [*final["output"], *outputs]})
    turn = chat["messages"][0]
    assert turn["role"] == "assistant" and turn["reasoning_content"] == shapes.REASONING
    assert [c["id"] for c in turn["tool_calls"]] == [first["call_id"], second["call_id"]]
    assert [m["role"] for m in chat["messages"][1:]] == ["tool", "tool"]


def test_a_calls_arguments_before_its_name_are_held_until_the_name_comes() -> None:
    chunks = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": '{"a": '}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_1", "function": {"name": "w", "arguments": "1}"}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]  # fmt: skip
    raw = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    final = check_stream(parse_sse(asyncio.run(_convert(raw + b"data: [DONE]\n\n", []))))
    assert [(i["call_id"], i["name"], i["arguments"]) for i in final["output"]] == [
        ("call_1", "w", '{"a": 1}')
    ]


def test_a_broken_stream_ends_with_an_error_event_and_no_completion() -> None:
    raw = b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"Hi"}}]}\n\n'
    raw += b'data: {"error": {"message": "The engine broke off.", "code": "upstream_broken"}}\n\n'
    kept: list[dict[str, Any]] = []
    events = parse_sse(asyncio.run(_convert(raw, kept)))
    assert events[-1]["type"] == "error"
    assert events[-1]["error"]["message"] == "The engine broke off."
    assert not any(e["type"] == "response.completed" for e in events)
    assert kept == []


# -- an engine's own stream (llama-server's shape: no indices, no sequence numbers) --------------


def _llama_server_stream() -> bytes:
    """The events llama-server's /v1/responses writes for reasoning, text and a call
    (tools/server/server-task.cpp), with its gaps."""
    rs, msg, fc = "rs_a", "msg_a", "fc_a"
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_a", "object": "response",
                                                  "status": "in_progress"}},
        {"type": "response.in_progress", "response": {"id": "resp_a", "object": "response",
                                                      "status": "in_progress"}},
        {"type": "response.output_item.added", "item": {"id": rs, "type": "reasoning",
                                                        "summary": [], "content": []}},
        {"type": "response.reasoning_text.delta", "delta": "Hm.", "item_id": rs},
        {"type": "response.output_item.done", "item": {"id": rs, "type": "reasoning",
         "summary": [], "content": [{"type": "reasoning_text", "text": "Hm."}]}},
        {"type": "response.output_item.added", "item": {"id": msg, "type": "message",
         "role": "assistant", "content": [], "status": "in_progress"}},
        {"type": "response.content_part.added", "item_id": msg,
         "part": {"type": "output_text", "text": ""}},
        {"type": "response.output_text.delta", "item_id": msg, "delta": "Hi"},
        {"type": "response.output_text.done", "item_id": msg, "text": "Hi"},
        {"type": "response.content_part.done", "item_id": msg,
         "part": {"type": "output_text", "text": "Hi", "annotations": []}},
        {"type": "response.output_item.done", "item": {"id": msg, "type": "message",
         "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "Hi", "annotations": []}]}},
        {"type": "response.output_item.added", "item": {"id": fc, "type": "function_call",
         "call_id": "call_a", "name": "w", "arguments": "", "status": "in_progress"}},
        {"type": "response.function_call_arguments.delta", "item_id": fc, "delta": "{}"},
        {"type": "response.output_item.done", "item": {"id": fc, "type": "function_call",
         "call_id": "call_a", "name": "w", "arguments": "{}", "status": "completed"}},
    ]  # fmt: skip
    final = {
        "id": "resp_a",
        "object": "response",
        "status": "completed",
        "model": "engine-name",
        "output": [e["item"] for e in events if e["type"] == "response.output_item.done"],
        "usage": {"input_tokens": 9, "output_tokens": 4, "total_tokens": 13},
    }
    events.append({"type": "response.completed", "response": final})
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def test_an_engines_own_stream_is_made_whole_renamed_counted_and_kept() -> None:
    kept: list[dict[str, Any]] = []
    usage: list[Any] = []

    async def run() -> bytes:
        events = relay(_chunks(_llama_server_stream()), forward_usage=True, on_usage=usage.append)
        convert = normalize("client-name", lambda r: None, kept.append)
        return b"".join([chunk async for chunk in convert(events)])

    final = check_stream(parse_sse(asyncio.run(run())))
    assert final["model"] == "client-name"
    assert [i["type"] for i in final["output"]] == ["reasoning", "message", "function_call"]
    assert usage == [{"input_tokens": 9, "output_tokens": 4, "total_tokens": 13}]
    assert kept == [final]


def test_an_engines_completed_reply_that_reached_max_output_tokens_is_incomplete() -> None:
    """llama-server's endpoint says `completed` even where it stopped for length: with the
    request's max_output_tokens (4, its output_tokens here) the stream and the store say
    `incomplete`; with a higher limit it stays `completed`."""
    for limit, status in ((4, "incomplete"), (5, "completed")):
        kept: list[dict[str, Any]] = []

        async def run(limit: int = limit, kept: list[dict[str, Any]] = kept) -> bytes:
            events = relay(
                _chunks(_llama_server_stream()), forward_usage=True, on_usage=lambda _: None
            )
            convert = normalize("client-name", lambda r: None, kept.append, limit)
            return b"".join([chunk async for chunk in convert(events)])

        events = parse_sse(asyncio.run(run()))
        final = check_stream(events)
        assert events[-1]["type"] == f"response.{status}" and final["status"] == status
        expected = {"reason": "max_output_tokens"} if status == "incomplete" else None
        assert final.get("incomplete_details") == expected
        assert kept == [final]


# -- previous_response_id and the store ---------------------------------------------------------


def test_the_store_expires_and_is_bounded_by_count_and_bytes() -> None:
    now = [0.0]
    store = ResponseStore(ttl_s=60, max_entries=2, max_bytes=400, clock=lambda: now[0])
    store.put("a", [{"n": 1}])
    store.put("b", [{"n": 2}])
    assert store.get("a") == [{"n": 1}]  # a is now the most recently used
    store.put("c", [{"n": 3}])
    assert store.get("b") is None and store.get("a") is not None and len(store) == 2
    store.put("big", [{"text": "x" * 300}])
    assert store.size <= 400 and store.get("big") is not None
    store.put("huge", [{"text": "x" * 500}])
    assert store.get("huge") is None
    now[0] = 61
    assert store.get("big") is None and len(store) == 0 and store.size == 0


def test_the_store_expires_by_the_time_stored_whatever_the_use() -> None:
    now = [0.0]
    store = ResponseStore(ttl_s=60, clock=lambda: now[0])
    store.put("a", [{"n": 1}])
    now[0] = 30
    store.put("b", [{"n": 2}])
    now[0] = 59
    assert store.get("a") is not None  # used last, but stored first
    now[0] = 61
    assert store.get("a") is None and store.get("b") == [{"n": 2}]
    store.put("b", [{"n": 3}])  # stored again: its hour starts again
    now[0] = 100
    assert store.get("b") == [{"n": 3}]
    now[0] = 162
    assert store.get("b") is None and len(store) == 0 and store.size == 0


def test_the_store_hands_out_copies() -> None:
    store = ResponseStore()
    store.put("a", [{"n": 1}])
    got = store.get("a")
    assert got is not None
    got.append({"n": 2})
    assert store.get("a") == [{"n": 1}]


def test_previous_response_id_is_expanded_stripped_and_store_false_keeps_nothing() -> None:
    surface = ResponsesSurface(ResponseStore())
    with pytest.raises(PreviousResponseNotFound) as missing:
        surface.prepare({"model": "m", "input": "x", "previous_response_id": "resp_no"}, ())
    assert missing.value.code == "previous_response_not_found"
    assert "input" in missing.value.message
    surface.store.put("resp_1", [{"type": "message", "role": "user", "content": "first"}])
    prepared = surface.prepare(
        {"model": "m", "input": "again", "previous_response_id": "resp_1"}, ()
    )
    assert isinstance(prepared, ResponsesPrepared)
    assert "previous_response_id" not in prepared.body
    assert [m["content"] for m in prepared.chat["messages"]] == ["first", "again"]
    engine = shapes.whole("vllm", "reasoning")
    plan = surface.plan(prepared, None, None)  # type: ignore[arg-type]
    assert plan.reply is not None
    done = json.loads(plan.reply(200, json.dumps(engine).encode()))
    assert done["previous_response_id"] == "resp_1"
    kept = surface.store.get(done["id"])
    assert kept is not None and [i.get("type") for i in kept] == [
        "message",
        "message",
        "reasoning",
        "message",
    ]
    unstored = surface.prepare({"model": "m", "input": "x", "store": False}, ())
    plan = surface.plan(unstored, None, None)  # type: ignore[arg-type]
    assert plan.reply is not None
    done = json.loads(plan.reply(200, json.dumps(engine).encode()))
    assert surface.store.get(done["id"]) is None


def test_gateway_security_md_lists_every_responses_field() -> None:
    from pathlib import Path

    from roundhouse.core.gateway.responses.request import RESPONSES_FIELDS, SERVER_ONLY

    doc = (Path(__file__).resolve().parents[2] / "docs" / "gateway-security.md").read_text()
    section = doc[doc.index("OpenAI's Responses API (`/v1/responses`)") :]
    section = section[: section.index("###")]
    for name in sorted(RESPONSES_FIELDS | set(SERVER_ONLY)):
        assert f"`{name}`" in section, name
