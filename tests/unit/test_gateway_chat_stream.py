"""The chat stream reading the three translators share: a relayed write's chunks parsed (an
error object ending the stream), tool calls joined by index, reasoning under either key."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator

import pytest

from roundhouse.core.gateway.chat_stream import (
    Batch,
    ToolCalls,
    chat_chunks,
    first_choice,
    reasoning_of,
)


def _batches(writes: list[bytes]) -> list[Batch]:
    async def events() -> AsyncIterator[bytes]:
        for write in writes:
            yield write

    async def run() -> list[Batch]:
        return [batch async for batch in chat_chunks(events())]

    return asyncio.run(run())


def test_a_batch_per_write_skipping_done_and_what_is_not_an_object() -> None:
    batches = _batches(
        [
            b'data: {"choices": [], "n": 1}\n\ndata: [1, 2]\n\ndata: not json\n\n',
            b'event: x\r\ndata:{"n": 2}\r\n\r\ndata: [DONE]\n\n',
        ]
    )
    assert [batch.chunks for batch in batches] == [[{"choices": [], "n": 1}], [{"n": 2}]]
    assert all(batch.error is None for batch in batches)


def test_an_error_object_ends_the_stream_after_what_came_before_it() -> None:
    error = {"error": {"message": "engine died"}}
    batches = _batches(
        [
            b'data: {"n": 1}\n\ndata: ' + json.dumps(error).encode() + b'\n\ndata: {"n": 2}\n\n',
            b'data: {"n": 3}\n\n',
        ]
    )
    assert len(batches) == 1
    assert batches[0].chunks == [{"n": 1}]
    assert batches[0].error == error
    # A chunk that has choices beside an "error" key is a chunk, not the end.
    both = {"error": None, "choices": []}
    assert _batches([b"data: " + json.dumps(both).encode() + b"\n\n"])[0].chunks == [both]


def _call(index: object, name: str | None = None, arguments: object = None) -> dict[str, object]:
    function: dict[str, object] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    return {"index": index, "id": f"call_{index}" if name else None, "function": function}


def test_tool_calls_join_by_index_holding_pieces_until_the_name() -> None:
    calls = ToolCalls()
    assert calls.take({"tool_calls": [_call(0, arguments='{"a"')]}) == []
    taken = calls.take({"tool_calls": [_call(0, "f", ": 1")]})
    assert [(call.name, call.id, pieces) for call, pieces in taken] == [("f", "call_0", '{"a": 1')]
    taken = calls.take({"tool_calls": [_call(0, "g", "}"), "junk", _call(True, "h", {"b": 2})]})
    # The first name and id stay; an index that is not an int is the call's position.
    assert [(call.index, call.name, pieces) for call, pieces in taken] == [
        (0, "f", "}"),
        (2, "h", '{"b": 2}'),
    ]
    assert [(call.index, call.arguments) for call in calls.joined()] == [
        (0, '{"a": 1}'),
        (2, '{"b": 2}'),
    ]
    assert calls.take({"content": "no calls"}) == []


def test_a_call_going_on_after_it_was_closed_is_dropped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls = ToolCalls()
    calls.take({"tool_calls": [_call(0, "f", "{}")]})
    calls.done(0)
    with caplog.at_level(logging.WARNING):
        assert calls.take({"tool_calls": [_call(0, arguments="more")]}) == []
    assert "Tool call 0 went on after it was closed" in caplog.text
    assert calls.joined()[0].arguments == "{}"


def test_first_choice_and_reasoning() -> None:
    assert first_choice({"choices": [{"delta": {}}]}) == {"delta": {}}
    assert first_choice({"choices": []}) is None
    assert first_choice({"choices": ["x"]}) is None
    assert reasoning_of({"reasoning_content": "a", "reasoning": "b"}) == "a"
    assert reasoning_of({"reasoning_content": "", "reasoning": "b"}) == "b"
    assert reasoning_of({"reasoning": None}) is None
