"""An engine's chat completion read back: relayed chunks parsed, tool calls joined, reasoning."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from roundhouse.core.gateway.sse import payloads

log = logging.getLogger(__name__)


@dataclass
class Batch:
    """The chat chunks of one relayed write, parsed, and the error object (`{"error": ...}`)
    the engine or the relay broke off with there, if any: nothing comes after it."""

    chunks: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None


async def chat_chunks(events: AsyncIterator[bytes]) -> AsyncIterator[Batch]:
    """A Batch per relayed write, so a translator writes what each brought at once. `[DONE]`
    and payloads that are not a JSON object are passed over; the stream ends at an error."""
    async for chunk in events:
        batch = Batch()
        for data in payloads(chunk):
            if data.strip() == b"[DONE]":
                continue
            try:
                parsed = json.loads(data)
            except ValueError:
                continue
            if not isinstance(parsed, dict):
                continue
            if "error" in parsed and "choices" not in parsed:
                batch.error = parsed
                break
            batch.chunks.append(parsed)
        yield batch
        if batch.error is not None:
            return


def first_choice(chunk: dict[str, Any]) -> dict[str, Any] | None:
    """The first of a chat chunk's choices (the only one the gateway asks for), else None."""
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    return choices[0]


def reasoning_of(message: dict[str, Any]) -> str | None:
    """The reasoning an engine returned apart from the answer (a message or a delta):
    `reasoning_content` (llama.cpp, SGLang, older vLLM) or `reasoning` (newer vLLM)."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return None


@dataclass
class ToolCall:
    """One streamed tool call as joined so far."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""  # every piece so far
    held: str = ""  # pieces that came before the name, not handed on yet


class ToolCalls:
    """An engine's streamed tool calls joined by index: the id and name from the first delta
    that has them, the argument pieces in order (arguments sent whole as an object, as one
    engine does, taken as their JSON)."""

    def __init__(self) -> None:
        self._calls: dict[int, ToolCall] = {}
        self._done: set[int] = set()

    def take(self, delta: dict[str, Any]) -> list[tuple[ToolCall, str]]:
        """The calls a chat delta's `tool_calls` go on with, each with the argument text to
        hand on now. A call whose name has not come yet is left out, its pieces held until
        it does (a client's call opens with its name)."""
        calls = delta.get("tool_calls")
        if not isinstance(calls, list):
            return []
        out = []
        for position, call in enumerate(calls):
            taken = self._add(call, position) if isinstance(call, dict) else None
            if taken is not None and taken[0].name is not None:
                out.append(taken)
        return out

    def _add(self, call: dict[str, Any], position: int) -> tuple[ToolCall, str] | None:
        """One tool call delta (at `position` in its list: its index where it names none):
        the call and the argument text to hand on now (what was held, then this piece). None
        for a call marked done: engines finish one call before the next, and a call once
        closed cannot reopen, so the rest is dropped with a warning."""
        index = call.get("index")
        index = index if isinstance(index, int) and not isinstance(index, bool) else position
        if index in self._done:
            log.warning("Tool call %d went on after it was closed; the rest is dropped.", index)
            return None
        held = self._calls.setdefault(index, ToolCall(index))
        if isinstance(call.get("id"), str) and call["id"] and held.id is None:
            held.id = call["id"]
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        if isinstance(function.get("name"), str) and function["name"] and held.name is None:
            held.name = function["name"]
        pieces = function.get("arguments")
        if isinstance(pieces, dict):
            pieces = json.dumps(pieces)
        pieces = pieces if isinstance(pieces, str) else ""
        held.arguments += pieces
        if held.name is None:
            held.held += pieces
            return held, ""
        pieces, held.held = held.held + pieces, ""
        return held, pieces

    def done(self, index: int) -> None:
        """Mark a call closed: whatever more comes for it is dropped."""
        self._done.add(index)

    def joined(self) -> list[ToolCall]:
        """Every call so far, by index."""
        return [self._calls[index] for index in sorted(self._calls)]
