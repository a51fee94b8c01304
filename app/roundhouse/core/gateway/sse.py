"""Relay an engine's server-sent events one by one, reading usage as they pass."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

# Events end at a blank line; engines write either LF or CRLF line ends.
_EVENT_END = re.compile(rb"\r?\n\r?\n")
# Most chunks of a stream with usage carry `"usage": null`: no need to parse those.
_NULL_USAGE = re.compile(rb'"usage"\s*:\s*null')


def _data_of(event: bytes) -> bytes | None:
    """The payload of an event's `data:` lines (joined as the SSE spec says), else None."""
    lines = [line for line in event.splitlines() if line.startswith(b"data:")]
    if not lines:
        return None
    return b"\n".join(line[5:].removeprefix(b" ") for line in lines)


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


def usage_of(event: bytes) -> tuple[Any, bool]:
    """(the usage the event carries or None, whether it is a usage-only chunk)."""
    chunk = _usage_chunk(event)
    if chunk is None:
        return None, False
    usage = chunk.get("usage")
    return usage, bool(usage) and chunk.get("choices") == []


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
    puts in the chunk that carries the usage."""
    pending = b""
    last_usage: Any = None
    try:
        async for chunk in chunks:
            pending += chunk
            start = 0
            out: list[bytes] = []
            for end in _EVENT_END.finditer(pending):
                event = pending[start : end.end()]
                start = end.end()
                parsed = _usage_chunk(event)
                usage = parsed.get("usage") if parsed is not None else None
                usage_only = False
                if parsed is not None and usage:
                    last_usage = usage
                    usage_only = parsed.get("choices") == []
                    if on_timings is not None and "timings" in parsed:
                        on_timings(parsed["timings"])
                if usage_only and not forward_usage:
                    continue
                out.append(event)
            pending = pending[start:]
            if out:
                if on_events is not None:
                    on_events(len(out))
                # Everything complete in this read goes out in one write: each event is
                # flushed as soon as the engine's bytes for it are in.
                yield b"".join(out)
        if pending.strip():
            yield pending
    finally:
        on_usage(last_usage)
