"""An engine's chat completion stream turned into the Responses API's event stream.

OpenAI's sequence (what `client.responses.stream(...).get_final_response()` rebuilds the
response from): `response.created`, `response.in_progress`; for each output item in turn
`response.output_item.added`, its content (a message's `content_part.added`, its
`output_text.delta`s, `output_text.done`, `content_part.done`; a function call's
`function_call_arguments.delta`s and `.done`; reasoning's `reasoning_text.delta`s and
`.done`), `response.output_item.done`; last `response.completed` (or `response.incomplete`
when the reply reached max_output_tokens) with the whole response and its usage. Every
event has an `event:` line and a `sequence_number` counting from 0. Reasoning and text are
each closed before the next item opens, and so is a tool call (by its chat index) whose
arguments are whole JSON when the next begins; calls whose arguments an engine interleaves
stay open side by side, each event naming its item's output index. A call whose name has not
come yet is held until it does, since its item opens with it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from roundhouse.core.gateway.chat_stream import (
    ToolCall,
    ToolCalls,
    chat_chunks,
    first_choice,
    reasoning_of,
)
from roundhouse.core.gateway.responses.reply import (
    call_id,
    call_item,
    message_item,
    reasoning_item,
    response,
    response_id,
    usage,
)
from roundhouse.core.gateway.surface import StreamConverter

# Called with the finished response (completed or incomplete) as the stream ends.
OnDone = Callable[[dict[str, Any]], None]


def sse(data: dict[str, Any]) -> bytes:
    """One event as OpenAI writes it: an `event:` line naming its type, then its data."""
    kind: str = data["type"]
    return b"event: " + kind.encode() + b"\ndata: " + json.dumps(data).encode() + b"\n\n"


def error_event(error: object, sequence_number: int) -> dict[str, Any]:
    """The stream's `error` event: OpenAI's fields, and an `error` object the SDK raises."""
    message = error.get("message") if isinstance(error, dict) else error
    text = message if isinstance(message, str) and message else "The engine's stream failed."
    code = error.get("code") if isinstance(error, dict) else None
    code = code if isinstance(code, str) else "server_error"
    return {
        "type": "error",
        "sequence_number": sequence_number,
        "code": code,
        "message": text,
        "param": None,
        "error": {"type": "server_error", "code": code, "message": text},
    }


class _Translator:
    """The state of one stream: the items added (by output index), the ones still open, what
    each tool call said."""

    def __init__(self, request: dict[str, Any], model: str) -> None:
        self.request = request
        self.model = model
        self.seq = 0
        self.rid = ""
        self.created_at: int | None = None
        # Every item added, at its output index, as it will be when done.
        self.output: list[dict[str, Any]] = []
        # The items open now: "reasoning", "message" or "tool:<chat index>" -> output index.
        self.open: dict[str, int] = {}
        self.finish: object = None
        self.usage: object = None
        self.tools = ToolCalls()

    def event(self, kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": self.seq, **fields}
        self.seq += 1
        return sse(data)

    def snapshot(self, status: str, usage_: dict[str, Any] | None = None) -> dict[str, Any]:
        return response(
            self.rid,
            self.request,
            self.model,
            status=status,
            output=list(self.output),
            usage_=usage_,
            created_at=self.created_at,
        )

    def start(self, chunk: dict[str, Any]) -> list[bytes]:
        self.rid = response_id()
        created = chunk.get("created")
        self.created_at = created if isinstance(created, int) else None
        first = self.snapshot("in_progress")
        return [
            self.event("response.created", response=first),
            self.event("response.in_progress", response=first),
        ]

    def _item(self, kind: str) -> tuple[dict[str, Any], int]:
        index = self.open[kind]
        return self.output[index], index

    def _close(self, kind: str) -> list[bytes]:
        if kind not in self.open:
            return []
        item, index = self._item(kind)
        del self.open[kind]
        at = {"item_id": item["id"], "output_index": index}
        out: list[bytes] = []
        if kind == "reasoning":
            text = item["content"][0]["text"]
            out.append(self.event("response.reasoning_text.done", content_index=0, text=text, **at))
        elif kind == "message":
            part = item["content"][0]
            out.append(
                self.event(
                    "response.output_text.done",
                    content_index=0,
                    text=part["text"],
                    logprobs=[],
                    **at,
                )
            )
            out.append(self.event("response.content_part.done", content_index=0, part=part, **at))
            item["status"] = "completed"
        else:
            self.tools.done(int(kind[5:]))
            out.append(
                self.event(
                    "response.function_call_arguments.done",
                    arguments=item["arguments"],
                    name=item["name"],
                    **at,
                )
            )
            item["status"] = "completed"
        out.append(self.event("response.output_item.done", output_index=index, item=item))
        return out

    def _close_all(self, keep: Callable[[str], bool] = lambda kind: False) -> list[bytes]:
        out: list[bytes] = []
        for kind in sorted(self.open, key=self.open.__getitem__):
            if not keep(kind):
                out += self._close(kind)
        return out

    def _open(self, kind: str, item: dict[str, Any]) -> list[bytes]:
        if kind.startswith("tool:"):
            # A call's item opens beside other calls whose arguments may still come (an
            # engine may interleave them); a call whose arguments are whole JSON already is
            # done, so the usual one-after-another order stays as OpenAI streams it.
            out = self._close_all(lambda k: k.startswith("tool:") and not self._whole(k))
        else:
            out = self._close_all()
        index = len(self.output)
        self.output.append(item)
        self.open[kind] = index
        added = json.loads(json.dumps(item))  # as it is now: empty, in progress
        out.append(self.event("response.output_item.added", output_index=index, item=added))
        if kind == "message":
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            out.append(
                self.event(
                    "response.content_part.added",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    part=part,
                )
            )
        return out

    def _whole(self, kind: str) -> bool:
        """Whether an open call's arguments so far are a whole JSON value."""
        item, _ = self._item(kind)
        try:
            json.loads(item["arguments"])
        except ValueError:
            return False
        return True

    def chunk(self, chunk: dict[str, Any]) -> list[bytes]:
        out = [] if self.rid else self.start(chunk)
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
        return out

    def _content(self, delta: dict[str, Any]) -> list[bytes]:
        out: list[bytes] = []
        reasoning = reasoning_of(delta)
        if reasoning:
            if "reasoning" not in self.open:
                out += self._open("reasoning", reasoning_item(""))
            item, index = self._item("reasoning")
            item["content"][0]["text"] += reasoning
            out.append(
                self.event(
                    "response.reasoning_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=reasoning,
                )
            )
        text = delta.get("content")
        if isinstance(text, str) and text:
            if "message" not in self.open:
                item = message_item("", status="in_progress")
                item["content"] = []
                out += self._open("message", item)
                item["content"] = [
                    {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                ]
            item, index = self._item("message")
            item["content"][0]["text"] += text
            out.append(
                self.event(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=text,
                    logprobs=[],
                )
            )
        for held, pieces in self.tools.take(delta):
            out += self._tool(held, pieces)
        return out

    def _tool(self, held: ToolCall, pieces: str) -> list[bytes]:
        assert held.name is not None  # ToolCalls.take holds a call until its name comes
        out: list[bytes] = []
        kind = f"tool:{held.index}"
        if kind not in self.open:
            item = call_item(call_id(held.id), held.name, "", status="in_progress")
            out += self._open(kind, item)
        if pieces:
            item, at = self._item(kind)
            item["arguments"] += pieces
            out.append(
                self.event(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=at,
                    delta=pieces,
                )
            )
        return out

    def end(self) -> tuple[list[bytes], dict[str, Any]]:
        out = [] if self.rid else self.start({})
        out += self._close_all()
        status = "incomplete" if self.finish == "length" else "completed"
        final = self.snapshot(status, usage(self.usage))
        out.append(self.event(f"response.{status}", response=final))
        return out, final


def chat_to_responses(request: dict[str, Any], model: str, on_done: OnDone) -> StreamConverter:
    """A StreamConverter from an engine's chat completion events to Responses events;
    `on_done` gets the finished response."""

    async def convert(events: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        state = _Translator(request, model)
        async for batch in chat_chunks(events):
            out = [event for chunk in batch.chunks for event in state.chunk(chunk)]
            if batch.error is not None:
                # The engine or the relay broke off: the response is not finished (no
                # response.completed), and the SDK raises on the error event.
                if not state.rid:
                    out += state.start({})
                out.append(sse(error_event(batch.error["error"], state.seq)))
                yield b"".join(out)
                return
            if out:
                yield b"".join(out)
        out, final = state.end()
        on_done(final)
        yield b"".join(out)

    return convert
