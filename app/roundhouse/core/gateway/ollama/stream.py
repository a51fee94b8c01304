"""An engine's chat completion (or completion) stream as Ollama's NDJSON stream.

Each line is one JSON object: `{model, created_at, message: {role, content, thinking?}, done:
false}` (`response` and `thinking` for /api/generate) as text comes, then one line with
`done: true`, `done_reason` and the counts and durations (see reply.stats). Ollama gives a
tool call whole, its arguments an object, where engines stream the arguments in pieces by
index: the pieces are joined here, and the calls go out in one line when the engine says the
turn is finished (its finish reason, else the stream's end).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from roundhouse.core.gateway.chat_stream import ToolCalls, chat_chunks, first_choice, reasoning_of
from roundhouse.core.gateway.errors import message_of
from roundhouse.core.gateway.ollama.reply import (
    Clock,
    created_at,
    done_reason,
    error_json,
    ollama_tool_call,
    stats,
)
from roundhouse.core.gateway.surface import StreamConverter


def line(data: dict[str, Any]) -> bytes:
    """One NDJSON line, compact as Ollama writes it."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


class _Translator:
    """The state of one stream: tool calls being joined, the finish, the usage."""

    def __init__(self, model: str, clock: Clock, generate: bool, hide_thinking: bool) -> None:
        self.model = model
        self.clock = clock
        self.generate = generate
        self.hide_thinking = hide_thinking
        self.calls = ToolCalls()
        self.calls_sent = False
        self.finish: object = None
        self.usage: object = None
        self.timings: object = None

    def _line(self, text: str, thinking: str | None) -> bytes:
        out: dict[str, Any] = {"model": self.model, "created_at": created_at()}
        if self.generate:
            out["response"] = text
            if thinking:
                out["thinking"] = thinking
        else:
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if thinking:
                message["thinking"] = thinking
            out["message"] = message
        out["done"] = False
        return line(out)

    def chunk(self, chunk: dict[str, Any]) -> list[bytes]:
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        if chunk.get("timings"):
            self.timings = chunk["timings"]
        choice = first_choice(chunk)
        if choice is None:
            return []
        out: list[bytes] = []
        delta = choice.get("delta")
        if isinstance(delta, dict):
            text = delta.get("content")
            text = text if isinstance(text, str) else ""
            thinking = None if self.hide_thinking else reasoning_of(delta)
            if text or thinking:
                self.clock.first = self.clock.first or Clock.now()
                out.append(self._line(text, thinking))
            if isinstance(delta.get("tool_calls"), list):
                self.clock.first = self.clock.first or Clock.now()
                self.calls.take(delta)  # sent whole at the turn's end (see _calls)
        elif isinstance(choice.get("text"), str) and choice["text"]:  # a completion's
            self.clock.first = self.clock.first or Clock.now()
            out.append(self._line(choice["text"], None))
        if choice.get("finish_reason"):
            self.finish = choice["finish_reason"]
            out += self._calls()
        return out

    def _calls(self) -> list[bytes]:
        joined = self.calls.joined()
        if not joined or self.calls_sent or self.generate:
            return []
        self.calls_sent = True
        calls = [
            ollama_tool_call(held.index, held.id, held.name, held.arguments) for held in joined
        ]
        message = {"role": "assistant", "content": "", "tool_calls": calls}
        return [
            line(
                {"model": self.model, "created_at": created_at(), "message": message, "done": False}
            )
        ]

    def end(self) -> bytes:
        out = self._calls()
        last: dict[str, Any] = {"model": self.model, "created_at": created_at()}
        if self.generate:
            last["response"] = ""
        else:
            last["message"] = {"role": "assistant", "content": ""}
        last["done"] = True
        last["done_reason"] = done_reason(self.finish)
        last.update(stats(self.clock, self.usage, self.timings))
        return b"".join([*out, line(last)])


def to_ndjson(model: str, clock: Clock, generate: bool, hide_thinking: bool) -> StreamConverter:
    """A StreamConverter from an engine's chat (or completion) events to Ollama's lines."""

    async def convert(events: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        state = _Translator(model, clock, generate, hide_thinking)
        async for batch in chat_chunks(events):
            out = [part for chunk in batch.chunks for part in state.chunk(chunk)]
            if batch.error is not None:
                # Broken off: Ollama's clients raise on a line with "error", and no done
                # line follows (the answer is not whole).
                yield b"".join(out) + line(error_json(message_of(batch.error)))
                return
            if out:
                yield b"".join(out)
        yield state.end()

    return convert
