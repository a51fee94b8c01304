"""Relay an engine's server-sent events one by one, reading usage as they pass."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

# Events end at a blank line; engines write either LF or CRLF line ends.
_EVENT_END = re.compile(rb"\r?\n\r?\n")
# The longest an event end can be: a scan resumes this far before where the last one ended.
_END_LENGTH = 4
# The most of one event the relay holds while waiting for its end. A chat chunk is a few
# hundred bytes; an engine that sends more without a blank line is broken, and is cut off.
MAX_EVENT_BYTES = 16 * 1024 * 1024
# Most chunks of a stream with usage carry `"usage": null`: no need to parse those.
_NULL_USAGE = re.compile(rb'"usage"\s*:\s*null')


def _data_of(event: bytes) -> bytes | None:
    """The payload of an event's `data:` lines (joined as the SSE spec says), else None."""
    lines = [line for line in event.splitlines() if line.startswith(b"data:")]
    if not lines:
        return None
    return b"\n".join(line[5:].removeprefix(b" ") for line in lines)


def payloads(chunk: bytes) -> list[bytes]:
    """The `data:` payload of each whole event in `chunk` (the relay yields whole events)."""
    out = []
    for event in _EVENT_END.split(chunk):
        data = _data_of(event)
        if data is not None:
            out.append(data)
    return out


def _usage_chunk(event: bytes) -> dict[str, Any] | None:
    """The event's chunk when it carries usage (the only events parsed), else None."""
    if b'"usage"' not in event or _NULL_USAGE.search(event):
        return None
    data = _data_of(event)
    if data is None or data.strip() == b"[DONE]":
        return None
    try:
        chunk = json.loads(data)
    except ValueError:
        return None
    return chunk if isinstance(chunk, dict) else None


def _anthropic_usage(chunk: dict[str, Any], last: Any) -> Any:
    """The usage a chunk carries. Anthropic's stream (an engine's own /v1/messages) says the
    prompt's in `message_start`'s message and the output's in `message_delta`: merged, so
    the last usage seen has both. The Responses API's (an engine's own /v1/responses) says
    it in the response its last event carries."""
    usage = chunk.get("usage")
    kind = chunk.get("type")
    if kind in ("response.completed", "response.incomplete", "response.failed"):
        response = chunk.get("response")
        return response.get("usage") if isinstance(response, dict) else None
    if kind == "message_start":
        message = chunk.get("message")
        return message.get("usage") if isinstance(message, dict) else None
    if kind == "message_delta" and isinstance(usage, dict) and isinstance(last, dict):
        return {**last, **usage}
    return usage


def usage_of(event: bytes) -> tuple[Any, bool]:
    """(the usage the event carries or None, whether it is a usage-only chunk)."""
    chunk = _usage_chunk(event)
    if chunk is None:
        return None, False
    usage = chunk.get("usage")
    return usage, bool(usage) and chunk.get("choices") == []


def _too_long() -> bytes:
    error = {
        "error": {
            "message": f"The engine sent an event longer than {MAX_EVENT_BYTES // (1024 * 1024)}"
            " MiB without an end; the gateway stopped the stream there.",
            "type": "server_error",
            "code": "upstream_event_too_large",
        }
    }
    return b"data: " + json.dumps(error).encode() + b"\n\n"


async def relay(
    chunks: AsyncIterator[bytes],
    *,
    forward_usage: bool,
    on_usage: Callable[[Any], None],
    on_events: Callable[[int], None] | None = None,
    on_timings: Callable[[Any], None] | None = None,
) -> AsyncIterator[bytes]:
    """Yield each complete event as soon as it arrives, byte for byte as the engine wrote it,
    except the usage-only chunk when the client did not ask for usage. `on_usage` gets the
    last usage seen (None when the stream ended without one); `on_events` the number of
    events in each write, for the metrics; `on_timings` llama-server's `timings`, which it
    puts in the chunk that carries the usage. An event longer than MAX_EVENT_BYTES ends the
    stream with an error event in OpenAI's shape.

    Linear in the stream's length: the bytes of an event still incomplete are kept in one
    growing buffer and searched for its end only where new bytes came."""
    pending = bytearray()
    # Up to here `pending` holds no event end (less the few bytes an end can span).
    scanned = 0
    last_usage: Any = None
    try:
        async for chunk in chunks:
            # The usual case, a read of whole events with nothing left over, copies nothing.
            buffer: bytes | bytearray = chunk
            if pending:
                pending += chunk
                buffer = pending
            start = 0
            out: list[bytes] = []
            for end in _EVENT_END.finditer(buffer, max(scanned - _END_LENGTH, 0)):
                event = bytes(buffer[start : end.end()])
                start = end.end()
                parsed = _usage_chunk(event)
                usage = _anthropic_usage(parsed, last_usage) if parsed is not None else None
                usage_only = False
                if parsed is not None and usage:
                    last_usage = usage
                    usage_only = parsed.get("choices") == []
                    if on_timings is not None and "timings" in parsed:
                        on_timings(parsed["timings"])
                if usage_only and not forward_usage:
                    continue
                out.append(event)
            if buffer is pending:
                del pending[:start]
            else:
                pending[:] = memoryview(chunk)[start:]
            scanned = len(pending)
            if out:
                if on_events is not None:
                    on_events(len(out))
                # Everything complete in this read goes out in one write: each event is
                # flushed as soon as the engine's bytes for it are in.
                yield b"".join(out)
            if scanned > MAX_EVENT_BYTES:
                yield _too_long()
                return
        if pending.strip():
            yield bytes(pending)
    finally:
        on_usage(last_usage)
