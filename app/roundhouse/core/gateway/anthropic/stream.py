"""An engine's chat completion stream turned into Anthropic's event stream.

Anthropic's sequence (what `client.messages.stream(...).get_final_message()` rebuilds the
message from): `message_start`; for each content block in turn `content_block_start`, its
deltas, `content_block_stop`; `message_delta` with the stop reason and usage; `message_stop`.
Blocks never interleave: thinking (from the engine's `reasoning_content`), text, and one
tool_use block per tool call index, each closed before the next opens. Engines stream tool
calls one after another, the arguments in pieces; a call whose name has not come yet is held
until it does, since the block must open with it.

Chat streams say the prompt's size only at their end, so `message_start` carries 0 input
tokens and `message_delta` the engine's counts (the SDK takes both from it).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from roundhouse.core.gateway.anthropic.reply import (
    error_body,
    message_id,
    stop_reason,
    tool_use_id,
    usage,
)
from roundhouse.core.gateway.chat_stream import (
    ToolCall,
    ToolCalls,
    chat_chunks,
    first_choice,
    reasoning_of,
)
from roundhouse.core.gateway.surface import StreamConverter


def sse(event: str, data: dict[str, Any]) -> bytes:
    """One event as Anthropic writes it: an `event:` line, then its data."""
    return b"event: " + event.encode() + b"\ndata: " + json.dumps(data).encode() + b"\n\n"


class _Translator:
    """The state of one stream: which block is open, what each tool call has said."""

    def __init__(self, model: str, stop_sequences: Sequence[str]) -> None:
        self.model = model
        self.stop_sequences = stop_sequences
        self.started = False
        self.index = -1  # the last block opened
        self.open: str | None = None  # "thinking", "text" or "tool:<chat index>"
        self.finish: object = None
        self.matched: object = None
        self.usage: object = None
        self.tool_calls = 0
        self.tools = ToolCalls()

    def start(self, chunk: dict[str, Any]) -> list[bytes]:
        self.started = True
        message: dict[str, Any] = {
            "id": message_id(chunk.get("id")),
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return [sse("message_start", {"type": "message_start", "message": message})]

    def _close(self) -> list[bytes]:
        if self.open is None:
            return []
        if self.open.startswith("tool:"):
            self.tools.done(int(self.open[5:]))
        self.open = None
        return [sse("content_block_stop", {"type": "content_block_stop", "index": self.index})]

    def _open(self, kind: str, block: dict[str, Any]) -> list[bytes]:
        out = self._close()
        self.index += 1
        self.open = kind
        start = {"type": "content_block_start", "index": self.index, "content_block": block}
        return [*out, sse("content_block_start", start)]

    def _delta(self, delta: dict[str, Any]) -> bytes:
        data = {"type": "content_block_delta", "index": self.index, "delta": delta}
        return sse("content_block_delta", data)

    def chunk(self, chunk: dict[str, Any]) -> list[bytes]:
        out = [] if self.started else self.start(chunk)
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        choice = first_choice(chunk)
        if choice is None:
            return out
        delta = choice.get("delta")
        if isinstance(delta, dict):
            out += self._content(delta)
        if choice.get("finish_reason"):
            self.finish = choice["finish_reason"]
            self.matched = choice.get("stop_reason", choice.get("matched_stop"))
        return out

    def _content(self, delta: dict[str, Any]) -> list[bytes]:
        out: list[bytes] = []
        reasoning = reasoning_of(delta)
        if reasoning:
            if self.open != "thinking":
                out += self._open("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            out.append(self._delta({"type": "thinking_delta", "thinking": reasoning}))
        text = delta.get("content")
        if isinstance(text, str) and text:
            if self.open != "text":
                out += self._open("text", {"type": "text", "text": ""})
            out.append(self._delta({"type": "text_delta", "text": text}))
        for held, pieces in self.tools.take(delta):
            out += self._tool(held, pieces)
        return out

    def _tool(self, held: ToolCall, pieces: str) -> list[bytes]:
        assert held.name is not None  # ToolCalls.take holds a call until its name comes
        out: list[bytes] = []
        kind = f"tool:{held.index}"
        if self.open != kind:
            block = {
                "type": "tool_use",
                "id": tool_use_id(held.id),
                "name": held.name,
                "input": {},
            }
            self.tool_calls += 1
            out += self._open(kind, block)
        if pieces:
            out.append(self._delta({"type": "input_json_delta", "partial_json": pieces}))
        return out

    def end(self) -> list[bytes]:
        out = [] if self.started else self.start({})
        out += self._close()
        reason, sequence = stop_reason(
            self.finish, self.tool_calls > 0, self.matched, self.stop_sequences
        )
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": sequence},
            "usage": usage(self.usage),
        }
        return [*out, sse("message_delta", delta), sse("message_stop", {"type": "message_stop"})]


def chat_to_messages(model: str, stop_sequences: Sequence[str]) -> StreamConverter:
    """A StreamConverter from an engine's chat completion events to Anthropic's events."""

    async def convert(events: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        state = _Translator(model, stop_sequences)
        async for batch in chat_chunks(events):
            out = [event for chunk in batch.chunks for event in state.chunk(chunk)]
            if batch.error is not None:
                # The engine or the relay broke off: said in Anthropic's shape, and the
                # message is not finished (no message_stop), so the SDK raises.
                yield b"".join(out) + sse("error", _stream_error(batch.error["error"]))
                return
            if out:
                yield b"".join(out)
        yield b"".join(state.end())

    return convert


def _stream_error(error: object) -> dict[str, Any]:
    message = error.get("message") if isinstance(error, dict) else error
    text = message if isinstance(message, str) and message else "The engine's stream failed."
    return error_body(500, text)
