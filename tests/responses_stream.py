"""A strict check of an OpenAI Responses event stream, and the response it ends with."""

from __future__ import annotations

import json
from typing import Any

TERMINAL = ("response.completed", "response.incomplete", "response.failed")
# Events about one item's content, and the item type each belongs to.
ITEM_EVENTS = {
    "response.content_part.added": "message",
    "response.content_part.done": "message",
    "response.output_text.delta": "message",
    "response.output_text.done": "message",
    "response.function_call_arguments.delta": "function_call",
    "response.function_call_arguments.done": "function_call",
    "response.reasoning_text.delta": "reasoning",
    "response.reasoning_text.done": "reasoning",
}


def parse_sse(raw: bytes) -> list[dict[str, Any]]:
    """The data of each event; every event has an `event:` line naming its type."""
    events = []
    for block in raw.replace(b"\r\n", b"\n").split(b"\n\n"):
        if not block.strip():
            continue
        name = None
        data = []
        for line in block.decode().split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        assert name is not None, f"an event without an event: line: {block!r}"
        assert data, f"an event without data: {block!r}"
        payload = json.loads("\n".join(data))
        assert payload.get("type") == name, (name, payload)
        events.append(payload)
    return events


def check_stream(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Fail unless `events` is a whole, valid sequence, and return its final response:
    sequence numbers 0, 1, 2...; `response.created` first, then `response.in_progress`; each
    item added at the next output index, its events naming it (id and index) while it is
    open, closed once by `output_item.done` with the text or arguments its deltas made; one
    terminal event last, whose response's output is the items done, in order, and whose
    response id is the one created."""
    types = [e["type"] for e in events]
    assert [e.get("sequence_number") for e in events] == list(range(len(events))), types
    assert types[:2] == ["response.created", "response.in_progress"], types
    assert types[-1] in TERMINAL, types
    assert sum(t in TERMINAL for t in types) == 1, types
    rid = events[0]["response"]["id"]
    assert rid and events[1]["response"]["id"] == rid
    added: dict[int, dict[str, Any]] = {}
    done: dict[int, dict[str, Any]] = {}
    text: dict[int, str] = {}
    for event in events[2:-1]:
        kind = event["type"]
        assert kind not in ("response.created",), types
        if kind == "response.in_progress":
            continue
        index = event["output_index"]
        if kind == "response.output_item.added":
            assert index == len(added), (index, types)
            item = event["item"]
            assert item["id"] and item["type"] in ("message", "function_call", "reasoning")
            added[index] = item
            text[index] = ""
            continue
        assert index in added and index not in done, (kind, index, types)
        item = added[index]
        if kind == "response.output_item.done":
            final = event["item"]
            assert final["id"] == item["id"] and final["type"] == item["type"]
            if final["type"] == "message":
                assert final["content"][0]["text"] == text[index]
            elif final["type"] == "function_call":
                assert final["arguments"] == text[index]
                assert final["call_id"] and final["name"]
            else:
                assert "".join(p["text"] for p in final["content"]) == text[index]
            done[index] = final
            continue
        assert ITEM_EVENTS[kind] == item["type"], (kind, item["type"])
        assert event["item_id"] == item["id"], event
        if kind.endswith(".delta"):
            assert isinstance(event["delta"], str)
            text[index] += event["delta"]
        elif kind == "response.output_text.done" or kind == "response.reasoning_text.done":
            assert event["text"] == text[index]
        elif kind == "response.function_call_arguments.done":
            assert event["arguments"] == text[index]
    assert sorted(done) == sorted(added), (types, "an item was never done")
    response = events[-1]["response"]
    assert response["id"] == rid
    assert [i["id"] for i in response["output"]] == [done[i]["id"] for i in sorted(done)]
    return dict(response)
