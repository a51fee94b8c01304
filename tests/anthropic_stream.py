"""A strict check of an Anthropic Messages event stream, and the message it builds."""

from __future__ import annotations

import json
from typing import Any

BLOCK_DELTAS = {"text": "text_delta", "thinking": "thinking_delta", "tool_use": "input_json_delta"}
STOP_REASONS = {"end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"}


def parse_sse(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of each event; every event must have both, and agree on the type."""
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
        events.append((name, payload))
    return events


def check_stream(events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Fail unless `events` is a whole, valid sequence: message_start, then each block's
    start, deltas and stop in order (indices 0, 1, 2...), message_delta, message_stop; `ping`
    anywhere. Return the message rebuilt from it."""
    names = [n for n, _ in events if n != "ping"]
    assert names and names[0] == "message_start", names
    assert names[-2:] == ["message_delta", "message_stop"], names
    assert names.count("message_start") == names.count("message_delta") == 1, names
    message: dict[str, Any] = {}
    open_block: dict[str, Any] | None = None
    partial_json = ""
    for name, data in events:
        if name == "ping":
            continue
        if name == "message_start":
            message = dict(data["message"])
            assert message["type"] == "message" and message["role"] == "assistant"
            assert message["content"] == [] and message["stop_reason"] is None
            assert isinstance(message["usage"]["input_tokens"], int)
            message["content"] = []
        elif name == "content_block_start":
            assert open_block is None, "a block opened before the last one closed"
            assert data["index"] == len(message["content"]), data
            open_block = dict(data["content_block"])
            assert open_block["type"] in BLOCK_DELTAS, open_block
            if open_block["type"] == "tool_use":
                assert open_block["id"] and open_block["name"] and open_block["input"] == {}
            partial_json = ""
            message["content"].append(open_block)
        elif name == "content_block_delta":
            assert open_block is not None and data["index"] == len(message["content"]) - 1
            delta = data["delta"]
            if delta["type"] == "signature_delta":
                assert open_block["type"] == "thinking"
                continue
            assert delta["type"] == BLOCK_DELTAS[open_block["type"]], (open_block, delta)
            if delta["type"] == "text_delta":
                open_block["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                open_block["thinking"] += delta["thinking"]
            else:
                partial_json += delta["partial_json"]
        elif name == "content_block_stop":
            assert open_block is not None and data["index"] == len(message["content"]) - 1
            if open_block["type"] == "tool_use":
                open_block["input"] = json.loads(partial_json) if partial_json else {}
                assert isinstance(open_block["input"], dict)
            open_block = None
        elif name == "message_delta":
            assert open_block is None, "message_delta while a block is open"
            assert data["delta"]["stop_reason"] in STOP_REASONS, data
            message["stop_reason"] = data["delta"]["stop_reason"]
            message["stop_sequence"] = data["delta"]["stop_sequence"]
            usage = data["usage"]
            assert isinstance(usage["output_tokens"], int)
            message["usage"] = {**message["usage"], **usage}
        elif name == "message_stop":
            pass
        else:
            raise AssertionError(f"an event Anthropic does not send: {name} {data}")
    return message
