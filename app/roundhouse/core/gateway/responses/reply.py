"""OpenAI's Response object from an engine's chat completion: output items, usage, status,
and errors in OpenAI's shape."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from roundhouse.core.gateway.chat_stream import reasoning_of
from roundhouse.core.gateway.errors import ContextTooLong, GatewayError
from roundhouse.core.gateway.openai_surface import openai_error_body


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def response_id() -> str:
    """A fresh id: never the engine's chat id, which the store would then key on (an engine
    or a stand-in may repeat one, and the id must name one conversation)."""
    return new_id("resp")


def usage(chat_usage: object) -> dict[str, Any]:
    """The Responses usage of a chat usage object: the engine's own counts, renamed
    (input_tokens is the whole prompt, cached tokens included, as OpenAI says it)."""
    chat = chat_usage if isinstance(chat_usage, dict) else {}
    prompt = _int(chat.get("prompt_tokens"))
    completion = _int(chat.get("completion_tokens"))
    details = chat.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    out_details = chat.get("completion_tokens_details")
    reasoning = _int(out_details.get("reasoning_tokens")) if isinstance(out_details, dict) else 0
    total = chat.get("total_tokens")
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": total if isinstance(total, int) else prompt + completion,
    }


def reasoning_item(text: str, item_id: str | None = None) -> dict[str, Any]:
    return {
        "id": item_id or new_id("rs"),
        "type": "reasoning",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": text}],
    }


def message_item(
    text: str, item_id: str | None = None, status: str = "completed"
) -> dict[str, Any]:
    return {
        "id": item_id or new_id("msg"),
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def call_item(
    call_id: str, name: str, arguments: str, item_id: str | None = None, status: str = "completed"
) -> dict[str, Any]:
    return {
        "id": item_id or new_id("fc"),
        "type": "function_call",
        "status": status,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


def call_id(value: object) -> str:
    return value if isinstance(value, str) and value else new_id("call")


def response(
    rid: str,
    request: dict[str, Any],
    model: str,
    *,
    status: str,
    output: list[dict[str, Any]],
    usage_: dict[str, Any] | None,
    created_at: int | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Response object, with the request's settings echoed as OpenAI does."""
    text = request.get("text")
    return {
        "id": rid,
        "object": "response",
        "created_at": created_at if created_at is not None else int(time.time()),
        "status": status,
        "error": error,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "model": model,
        "output": output,
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": request.get("previous_response_id"),
        "reasoning": request.get("reasoning"),
        "store": request.get("store", True),
        "temperature": request.get("temperature"),
        "text": text if isinstance(text, dict) else {"format": {"type": "text"}},
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools", []),
        "top_p": request.get("top_p"),
        "truncation": request.get("truncation", "disabled"),
        "usage": usage_,
        "metadata": request.get("metadata") or {},
    }


def from_chat(raw: bytes, request: dict[str, Any], model: str) -> dict[str, Any]:
    """A Response from an engine's whole chat completion."""
    body = json.loads(raw)
    choices = body.get("choices") if isinstance(body, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else {}
    message = choice.get("message") if isinstance(choice, dict) else None
    message = message if isinstance(message, dict) else {}
    output: list[dict[str, Any]] = []
    reasoning = reasoning_of(message)
    if reasoning:
        output.append(reasoning_item(reasoning))
    text = message.get("content")
    if isinstance(text, str) and text:
        output.append(message_item(text))
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {})
        output.append(call_item(call_id(call.get("id")), str(function.get("name", "")), arguments))
    incomplete = isinstance(choice, dict) and choice.get("finish_reason") == "length"
    created = body.get("created") if isinstance(body, dict) else None
    return response(
        response_id(),
        request,
        model,
        status="incomplete" if incomplete else "completed",
        output=output,
        usage_=usage(body.get("usage") if isinstance(body, dict) else None),
        created_at=created if isinstance(created, int) else None,
    )


def gateway_error(exc: GatewayError) -> dict[str, Any]:
    """An error the gateway answers itself, in OpenAI's shape; the context budget names the
    Responses field that sets the reply's length."""
    param, message = exc.param, exc.message
    if isinstance(exc, ContextTooLong):
        # The budget reads the translated chat request: its names, said in this API's.
        param = {"max_tokens": "max_output_tokens", "messages": "input"}.get(param or "", param)
        message = message.replace("max_tokens", "max_output_tokens")
    return openai_error_body(message, exc.kind, exc.code, param)


def engine_error(status: int, raw: bytes) -> bytes:
    """An engine's error reply in OpenAI's shape (left as it is when it already is)."""
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return raw
    message = None
    if isinstance(body, dict):
        error = body.get("error")
        message = error if isinstance(error, str) else body.get("message") or body.get("detail")
    if not isinstance(message, str) or not message:
        message = raw.decode("utf-8", "replace")[:2000] or f"The engine answered {status}."
    kind = "invalid_request_error" if status < 500 else "server_error"
    return json.dumps(openai_error_body(message, kind, None)).encode()


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
