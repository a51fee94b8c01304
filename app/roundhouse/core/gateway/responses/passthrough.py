"""An engine's own Responses stream, made whole for strict clients as it passes.

llama-server's /v1/responses streams its events without `sequence_number`, most without
`output_index` or `content_index`, and without `function_call_arguments.done` or
`reasoning_text.done`; the openai SDK's `responses.stream()` rebuilds the response by those
indices. Each event is read and the missing ones filled in, in OpenAI's order; an engine
that writes them already (vLLM) is renumbered only. The response the lifecycle events carry
gets the client's model name, and the finished one goes to `on_done` (the store).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

from roundhouse.core.gateway.responses.stream import error_event, sse

_EVENT_END = re.compile(rb"\r?\n\r?\n")
_LIFECYCLE = frozenset(
    {"response.created", "response.in_progress", "response.completed", "response.incomplete",
     "response.failed", "response.queued"}
)  # fmt: skip
_FINISHED = frozenset({"response.completed", "response.incomplete"})
# Where an item's own events say which content part they are about.
_PART_EVENTS = frozenset(
    {"response.content_part.added", "response.content_part.done", "response.output_text.delta",
     "response.output_text.done", "response.reasoning_text.delta", "response.reasoning_text.done"}
)  # fmt: skip


def mark_cut(response: dict[str, Any], limit: object) -> None:
    """Say `incomplete` where a `completed` response's output reached max_output_tokens:
    llama-server's endpoint says `completed` whatever stopped it (its chat completions say
    `length`), and a client reads `incomplete` to know the reply was cut."""
    usage = response.get("usage")
    used = usage.get("output_tokens") if isinstance(usage, dict) else None
    if (
        response.get("status") == "completed"
        and isinstance(limit, int)
        and isinstance(used, int)
        and used >= limit
    ):
        response["status"] = "incomplete"
        response["incomplete_details"] = {"reason": "max_output_tokens"}


class Normalizer:
    """The state of one passed-through stream."""

    def __init__(
        self, model: str, echo: Callable[[dict[str, Any]], None], limit: int | None = None
    ) -> None:
        self.model = model
        self.echo = echo  # sets what the client asked for on a lifecycle event's response
        self.limit = limit  # the request's max_output_tokens
        self.seq = 0
        self.indices: dict[str, int] = {}  # item id -> output_index
        self.open: dict[str, dict[str, Any]] = {}  # item id -> what its events said so far
        self.done: dict[str, Any] | None = None

    def _out(self, data: dict[str, Any]) -> bytes:
        data["sequence_number"] = self.seq
        self.seq += 1
        return sse(data)

    def event(self, data: dict[str, Any]) -> list[bytes]:
        kind = data.get("type")
        if not isinstance(kind, str):
            return []
        if kind in _LIFECYCLE:
            response = data.get("response")
            if isinstance(response, dict):
                response["model"] = self.model
                response.setdefault("object", "response")
                response.setdefault("output", [])
                self.echo(response)
                if kind in _FINISHED:
                    mark_cut(response, self.limit)
                    if response.get("status") == "incomplete":
                        data["type"] = "response.incomplete"
                    self.done = response
            return [self._out(data)]
        item = data.get("item")
        item_id = item.get("id") if isinstance(item, dict) else data.get("item_id")
        out: list[bytes] = []
        if kind == "response.output_item.added" and isinstance(item_id, str):
            self.indices.setdefault(item_id, len(self.indices))
            self.open[item_id] = {"type": item.get("type") if isinstance(item, dict) else None}
        if isinstance(item_id, str) and item_id in self.indices:
            data.setdefault("output_index", self.indices[item_id])
            if kind in _PART_EVENTS:
                data.setdefault("content_index", 0)
            state = self.open.get(item_id)
            if state is not None:
                state[kind] = True
            if kind == "response.output_item.done" and isinstance(item, dict):
                out += self._closing(item_id, item, state or {})
                self.open.pop(item_id, None)
        out.append(self._out(data))
        return out

    def _closing(self, item_id: str, item: dict[str, Any], said: dict[str, Any]) -> list[bytes]:
        """The `.done` events an item's own `output_item.done` needs before it."""
        at = {"item_id": item_id, "output_index": self.indices[item_id]}
        if item.get("type") == "function_call" and not said.get(
            "response.function_call_arguments.done"
        ):
            return [
                self._out(
                    {
                        "type": "response.function_call_arguments.done",
                        "arguments": item.get("arguments", ""),
                        "name": item.get("name"),
                        **at,
                    }
                )
            ]
        if item.get("type") == "reasoning" and not said.get("response.reasoning_text.done"):
            content = item.get("content")
            text = (
                "".join(p.get("text", "") for p in content if isinstance(p, dict))
                if isinstance(content, list)
                else ""
            )
            return [
                self._out(
                    {"type": "response.reasoning_text.done", "content_index": 0, "text": text, **at}
                )
            ]
        return []


def normalize(
    model: str,
    echo: Callable[[dict[str, Any]], None],
    on_done: Callable[[dict[str, Any]], None],
    limit: int | None = None,
) -> Callable[[AsyncIterator[bytes]], AsyncIterator[bytes]]:
    """A StreamConverter that passes an engine's Responses events on, made whole; `limit`
    is the request's max_output_tokens (see mark_cut)."""

    async def convert(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        state = Normalizer(model, echo, limit)
        async for chunk in chunks:
            out: list[bytes] = []
            for event in _EVENT_END.split(chunk):
                lines = [ln[5:].strip() for ln in event.splitlines() if ln.startswith(b"data:")]
                if not lines:
                    continue
                try:
                    data = json.loads(b"\n".join(lines))
                except ValueError:
                    continue
                if not isinstance(data, dict):
                    continue
                if "error" in data and data.get("type") != "error":
                    # The relay's own (the engine broke off): said as the stream's error event.
                    out.append(sse(error_event(data["error"], state.seq)))
                    yield b"".join(out)
                    return
                out += state.event(data)
            if out:
                yield b"".join(out)
        if state.done is not None:
            on_done(state.done)

    return convert
