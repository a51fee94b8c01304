"""Ollama's reply shapes from an engine's OpenAI replies: chat, generate, embed, errors, and
the closing statistics (counts from the engine's usage, durations in nanoseconds)."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from roundhouse.core.gateway.chat_stream import reasoning_of
from roundhouse.core.gateway.errors import GatewayError, message_of

log = logging.getLogger(__name__)

# OpenAI's finish reasons as Ollama says them; a tool call ends a turn with "stop" there.
_DONE_REASONS = {"stop": "stop", "length": "length", "tool_calls": "stop", "function_call": "stop"}
_MS_NS = 1_000_000


def created_at() -> str:
    """Now as Ollama writes it: RFC 3339 in UTC."""
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def error_json(message: str) -> dict[str, Any]:
    return {"error": message}


def gateway_error(exc: GatewayError) -> dict[str, Any]:
    return error_json(exc.message)


def engine_error(status: int, raw: bytes) -> bytes:
    """An engine's error reply as Ollama's `{"error": "..."}`."""
    try:
        body: object = json.loads(raw)
    except ValueError:
        body = raw.decode("utf-8", "replace").strip() or f"The engine answered {status}."
    return json.dumps(error_json(message_of(body))).encode()


def done_reason(finish: object) -> str:
    if isinstance(finish, str) and finish:
        return _DONE_REASONS.get(finish, finish)
    return "stop"


def arguments_object(arguments: object) -> dict[str, Any]:
    """A tool call's arguments as the object Ollama's clients expect. Arguments that are not
    a JSON object are kept whole under "value" rather than lost."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            parsed = json.loads(arguments)
        except ValueError:
            log.warning("A tool call's arguments were not JSON; passed on as a string.")
            return {"value": arguments}
        return parsed if isinstance(parsed, dict) else {"value": parsed}
    return {}


def ollama_tool_call(
    index: int, call_id: object, name: object, arguments: object
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "function": {"index": index, "name": name, "arguments": arguments_object(arguments)}
    }
    if isinstance(call_id, str) and call_id:
        # Newer Ollama clients send it back as the tool result's tool_call_id.
        out["id"] = call_id
    return out


@dataclass
class Clock:
    """When a request arrived and when it went to the engine (monotonic nanoseconds): the
    time between is Ollama's `load_duration` (a just-in-time start and the queue)."""

    arrived: int
    sent: int = 0
    first: int = 0  # the first generated token came

    @staticmethod
    def now() -> int:
        return time.monotonic_ns()


def stats(clock: Clock, usage: object, timings: object, end: int | None = None) -> dict[str, Any]:
    """Ollama's closing counts and durations. Counts are the engine's usage; durations are
    llama-server's own `timings` where it sends them, else measured here."""
    end = end or Clock.now()
    sent = clock.sent or clock.arrived
    first = clock.first or end
    out: dict[str, Any] = {
        "total_duration": end - clock.arrived,
        "load_duration": sent - clock.arrived,
        "prompt_eval_duration": first - sent,
        "eval_duration": end - first,
    }
    if isinstance(timings, dict):
        for key, name in (("prompt_ms", "prompt_eval_duration"), ("predicted_ms", "eval_duration")):
            value = timings.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                out[name] = int(value * _MS_NS)
    if isinstance(usage, dict):
        for key, name in (
            ("prompt_tokens", "prompt_eval_count"),
            ("completion_tokens", "eval_count"),
        ):
            value = usage.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                out[name] = value
    return out


def _choice(body: object) -> dict[str, Any]:
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    return first if isinstance(first, dict) else {}


def whole_chat(
    raw: bytes, model: str, clock: Clock, generate: bool, hide_thinking: bool
) -> dict[str, Any]:
    """One Ollama reply (`/api/chat`, or `/api/generate` when `generate`) from an engine's
    whole chat completion or completion."""
    body = json.loads(raw)
    end = Clock.now()
    clock.first = clock.first or end
    choice = _choice(body)
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    text = message.get("content") if message else choice.get("text")
    thinking = None if hide_thinking or not message else reasoning_of(message)
    out: dict[str, Any] = {"model": model, "created_at": created_at()}
    if generate:
        out["response"] = text if isinstance(text, str) else ""
        if thinking:
            out["thinking"] = thinking
    else:
        said: dict[str, Any] = {
            "role": "assistant",
            "content": text if isinstance(text, str) else "",
        }
        if thinking:
            said["thinking"] = thinking
        calls = message.get("tool_calls") if message else None
        if isinstance(calls, list) and calls:
            said["tool_calls"] = [
                ollama_tool_call(
                    i,
                    c.get("id"),
                    (c.get("function") or {}).get("name"),
                    (c.get("function") or {}).get("arguments"),
                )
                for i, c in enumerate(calls)
                if isinstance(c, dict)
            ]
        out["message"] = said
    out["done"] = True
    out["done_reason"] = done_reason(choice.get("finish_reason"))
    timings = body.get("timings") if isinstance(body, dict) else None
    usage = body.get("usage") if isinstance(body, dict) else None
    out.update(stats(clock, usage, timings, end))
    return out


def whole_embed(raw: bytes, model: str, clock: Clock, legacy: bool) -> dict[str, Any]:
    """`/api/embed`'s reply (or `/api/embeddings`' when `legacy`) from OpenAI's embeddings."""
    body = json.loads(raw)
    data = body.get("data") if isinstance(body, dict) else None
    rows = [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []
    rows.sort(key=lambda d: d.get("index", 0) if isinstance(d.get("index"), int) else 0)
    vectors = [d.get("embedding") for d in rows]
    if legacy:
        return {"embedding": vectors[0] if vectors else []}
    end = Clock.now()
    out: dict[str, Any] = {
        "model": model,
        "embeddings": vectors,
        "total_duration": end - clock.arrived,
        "load_duration": (clock.sent or clock.arrived) - clock.arrived,
    }
    usage = body.get("usage") if isinstance(body, dict) else None
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if isinstance(tokens, int) and not isinstance(tokens, bool):
        out["prompt_eval_count"] = tokens
    return out
