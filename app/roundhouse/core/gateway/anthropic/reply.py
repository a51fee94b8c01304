"""Anthropic's reply shapes: a message from an engine's chat completion, usage, stop reasons
and errors, the gateway's own and the engine's."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from roundhouse.core.gateway.chat_stream import reasoning_of
from roundhouse.core.gateway.errors import ContextTooLong, GatewayError

log = logging.getLogger(__name__)

# Anthropic's error types by HTTP status (docs.anthropic.com, "Errors"); the SDK picks its
# exception by status, and clients such as Claude Code read the type.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    529: "overloaded_error",
}


def error_type(status: int) -> str:
    return ERROR_TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")


def error_body(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type(status), "message": message}}


def gateway_error(exc: GatewayError) -> dict[str, Any]:
    """An error the gateway answers itself, in Anthropic's shape. The context budget says it
    as Anthropic does (Claude Code reads those words to shorten the prompt or max_tokens),
    then Roundhouse's own sentence with the setting to change."""
    message = exc.message
    if isinstance(exc, ContextTooLong):
        if exc.prompt_tokens is None:
            said = f"prompt is too long: more than {exc.context} maximum"
        elif exc.prompt_tokens > exc.context:
            said = f"prompt is too long: {exc.prompt_tokens} tokens > {exc.context} maximum"
        else:
            said = (
                f"input length and `max_tokens` exceed context limit: {exc.prompt_tokens} + "
                f"{exc.max_tokens} > {exc.context}, decrease input length or `max_tokens` and "
                "try again"
            )
        message = f"{said}. {exc.message}"
    return error_body(exc.status, message)


def engine_error(status: int, raw: bytes) -> bytes:
    """An engine's error reply in Anthropic's shape (left as it is when it already is)."""
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("type") == "error":
        return raw
    message = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            message = error.get("message")
        elif isinstance(error, str):
            message = error
        message = message or body.get("message") or body.get("detail")
    if not isinstance(message, str) or not message:
        message = raw.decode("utf-8", "replace")[:2000] or f"The engine answered {status}."
    return json.dumps(error_body(status, message)).encode()


def stop_reason(
    finish: object, has_tool_calls: bool, matched: object, stop_sequences: Sequence[str]
) -> tuple[str, str | None]:
    """(stop_reason, stop_sequence) for a chat choice's finish_reason. Which stop sequence
    ended the text is known only where the engine says it (vLLM's `stop_reason`, SGLang's
    `matched_stop`); llama-server's and mlx_lm's chat replies do not, and say end_turn."""
    if has_tool_calls or finish in ("tool_calls", "function_call"):
        return "tool_use", None
    if finish == "length":
        return "max_tokens", None
    if isinstance(matched, str) and matched in stop_sequences:
        return "stop_sequence", matched
    return "end_turn", None


def usage(chat_usage: object) -> dict[str, int]:
    """Anthropic's usage from a chat usage object: input_tokens is what was not read from the
    engine's prompt cache, as llama-server's own /v1/messages says it; input_tokens plus
    cache_read_input_tokens is the engine's prompt_tokens."""
    if not isinstance(chat_usage, dict):
        return {"input_tokens": 0, "output_tokens": 0}
    prompt = _int(chat_usage.get("prompt_tokens"))
    details = chat_usage.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    cached = min(cached, prompt)
    out = {
        "input_tokens": prompt - cached,
        "output_tokens": _int(chat_usage.get("completion_tokens")),
    }
    if cached:
        out["cache_read_input_tokens"] = cached
    return out


def tool_input(arguments: object) -> dict[str, Any]:
    """A tool call's arguments (a JSON string in chat) as the object Anthropic's input is."""
    if isinstance(arguments, dict):
        return arguments
    if not isinstance(arguments, str) or not arguments.strip():
        return {}
    try:
        parsed = json.loads(arguments)
    except ValueError:
        log.info("A tool call's arguments are not JSON: %.200s", arguments)
        return {}
    return parsed if isinstance(parsed, dict) else {}


def message_id(chat_id: object) -> str:
    if isinstance(chat_id, str) and chat_id:
        return f"msg_{chat_id.removeprefix('chatcmpl-')}"
    return f"msg_{uuid.uuid4().hex}"


def tool_use_id(call_id: object) -> str:
    return call_id if isinstance(call_id, str) and call_id else f"toolu_{uuid.uuid4().hex[:24]}"


def from_chat(raw: bytes, model: str, stop_sequences: Sequence[str]) -> dict[str, Any]:
    """An Anthropic message from an engine's whole chat completion."""
    body = json.loads(raw)
    choices = body.get("choices") if isinstance(body, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else {}
    message = choice.get("message") if isinstance(choice, dict) else None
    message = message if isinstance(message, dict) else {}
    content: list[dict[str, Any]] = []
    reasoning = reasoning_of(message)
    if reasoning:
        content.append({"type": "thinking", "thinking": reasoning, "signature": ""})
    text = message.get("content")
    if isinstance(text, str) and text:
        content.append({"type": "text", "text": text})
    calls = message.get("tool_calls")
    calls = [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
    for call in calls:
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        content.append(
            {
                "type": "tool_use",
                "id": tool_use_id(call.get("id")),
                "name": function.get("name", ""),
                "input": tool_input(function.get("arguments")),
            }
        )
    matched = choice.get("stop_reason", choice.get("matched_stop"))
    reason, sequence = stop_reason(
        choice.get("finish_reason"), bool(calls), matched, stop_sequences
    )
    return {
        "id": message_id(body.get("id")),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": reason,
        "stop_sequence": sequence,
        "usage": usage(body.get("usage")),
    }


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
