"""Stream one chat reply through the daemon's gateway, measured as the user sees it (Qt-free:
the GUI and the CLI both use it)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
from httpx_sse import EventSource, SSEError

from roundhouse.api.chat import Message, ReplyStats, Role, SamplingParams
from roundhouse.client.chat_meter import ReplyMeter, error_message, parse_chunk

if TYPE_CHECKING:
    from roundhouse.client.client import DaemonClient

# Each engine's defaults: what the request carries when the user changed nothing.
NO_PARAMS = SamplingParams()

__all__ = [
    "NO_PARAMS",
    "ChatDelta",
    "ChatDone",
    "ChatFailed",
    "ReplyMeter",
    "history_messages",
    "stream_chat",
]


@dataclass(frozen=True)
class ChatDelta:
    """Text that arrived since the last event."""

    content: str = ""
    reasoning: str = ""


@dataclass(frozen=True)
class ChatDone:
    stats: ReplyStats


class ChatFailed(Exception):
    """The reply failed: `message` is the words for the user, `stats` what was measured."""

    def __init__(self, message: str, stats: ReplyStats) -> None:
        super().__init__(message)
        self.message = message
        self.stats = stats


def request_body(
    model: str, messages: Sequence[dict[str, str]], params: SamplingParams
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": list(messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    # Only what the user set: None leaves the engine's (or the model's) default.
    body.update(params.model_dump(exclude_none=True))
    return body


def history_messages(system_prompt: str, messages: Sequence[Message]) -> list[dict[str, str]]:
    """A conversation as the engine should read it: the system prompt, then each message;
    failed replies are left out (they hold no answer, only our error)."""
    sent = [{"role": "system", "content": system_prompt}] if system_prompt.strip() else []
    for message in messages:
        if message.role == Role.ASSISTANT and message.stats and message.stats.error:
            continue
        sent.append({"role": message.role.value, "content": message.content})
    return sent


async def stream_chat(
    client: DaemonClient,
    model: str,
    messages: list[dict[str, str]],
    params: SamplingParams = NO_PARAMS,
    *,
    meter: ReplyMeter | None = None,
) -> AsyncGenerator[ChatDelta | ChatDone, None]:
    """Each piece of the reply as it arrives, then ChatDone with the reply's figures.

    Raises ChatFailed for an error answer or a broken stream. Closing the generator
    (`aclose()`, e.g. through `contextlib.aclosing`) closes the HTTP response at once, and
    the gateway then stops the engine; `meter`, when given, still has the figures after.
    """
    meter = meter if meter is not None else ReplyMeter(model)
    meter.start()
    complete = False
    try:
        async with client.open_chat_completion(request_body(model, messages, params)) as reply:
            meter.read_headers(reply.headers)
            await _check_answer(reply, meter)
            async with aclosing(EventSource(reply).aiter_sse()) as events:
                async for event in events:
                    if event.data.strip() == "[DONE]":
                        complete = True
                        break
                    if not event.data:
                        continue
                    chunk = parse_chunk(event.data)
                    if chunk.error is not None:
                        meter.end()
                        raise ChatFailed(chunk.error, meter.stats(error=chunk.error))
                    meter.add(chunk)
                    if chunk.content or chunk.reasoning:
                        yield ChatDelta(content=chunk.content, reasoning=chunk.reasoning)
    except (httpx.HTTPError, SSEError) as exc:
        meter.end()
        message = _broken(client, exc, started=meter.first_at is not None)
        raise ChatFailed(message, meter.stats(error=message)) from exc
    meter.end()
    if not complete and meter.finish_reason is None:
        message = "The reply broke off before it was complete; try again."
        raise ChatFailed(message, meter.stats(error=message))
    yield ChatDone(meter.stats())


async def _check_answer(reply: httpx.Response, meter: ReplyMeter) -> None:
    """Raise ChatFailed unless the reply is a stream: the gateway's error in its words."""
    media_type = reply.headers.get("content-type", "").partition(";")[0].strip()
    if reply.is_success and media_type == "text/event-stream":
        return
    raw = await reply.aread()
    meter.end()
    try:
        message = error_message(json.loads(raw))
    except ValueError:
        message = None
    if message is None:
        text = raw.decode(errors="replace").strip()[:300]
        message = (
            f"The gateway answered {reply.status_code} {reply.reason_phrase}"
            + (f": {text}" if text else ".")
            if not reply.is_success
            else f"The gateway answered without streaming ({media_type or 'no content type'})."
        )
    raise ChatFailed(message, meter.stats(error=message))


def _broken(client: DaemonClient, exc: Exception, *, started: bool) -> str:
    kind = type(exc).__name__
    if isinstance(exc, httpx.ConnectError):
        return (
            f"The Roundhouse daemon at {client.base_url} does not answer ({kind}). Is it still "
            "running? Try `roundhouse status`."
        )
    if isinstance(exc, httpx.TimeoutException):
        return f"The model did not answer in time ({kind}); it may still be loading. Try again."
    where = "during the reply" if started else "before the reply began"
    return f"The connection to the daemon broke {where} ({kind}: {exc}). Try again."
