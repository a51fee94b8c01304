"""An OpenAI chat or completion request as Ollama's own API reads it, for counting its prompt.

Ollama's OpenAI-compatible API turns a request into its own the same way (openai/openai.go,
FromChatRequest): each text part of a message becomes a message, a tool call's arguments an
object, a tool result names its tool. The prompt Ollama renders from this is the one it
renders from the OpenAI request. Images are not converted: a request with media is left
uncounted, since decoding them would cost more than the check is worth.
"""

from __future__ import annotations

import json
from typing import Any

# What the prompt is rendered from besides the messages, carried as they are.
_CARRIED = ("model", "tools")


def native_chat(body: dict[str, Any]) -> dict[str, Any] | None:
    """`body`, an OpenAI chat request, as Ollama's `/api/chat` request; None where it has
    media or a shape Ollama would refuse."""
    raw = body.get("messages")
    if not isinstance(raw, list):
        return None
    messages: list[dict[str, Any]] = []
    for message in raw:
        converted = _message(message, raw)
        if converted is None:
            return None
        messages.extend(converted)
    native: dict[str, Any] = {k: body[k] for k in _CARRIED if k in body}
    native["messages"] = messages
    effort = body.get("reasoning_effort")
    if isinstance(effort, str):
        # As Ollama reads it: "none" turns thinking off, a level asks for that much.
        native["think"] = False if effort == "none" else effort
    return native


def native_generate(body: dict[str, Any]) -> dict[str, Any] | None:
    """`body`, an OpenAI completion request, as Ollama's `/api/generate` request."""
    prompt = body.get("prompt")
    if not isinstance(prompt, str):
        return None
    native: dict[str, Any] = {"model": body.get("model"), "prompt": prompt}
    if isinstance(body.get("suffix"), str):
        native["suffix"] = body["suffix"]
    return native


def _message(message: object, messages: list[Any]) -> list[dict[str, Any]] | None:
    if not isinstance(message, dict) or not isinstance(message.get("role"), str):
        return None
    role: str = message["role"]
    extra: dict[str, Any] = {}
    calls = message.get("tool_calls")
    if calls:
        converted = _tool_calls(calls)
        if converted is None:
            return None
        extra["tool_calls"] = converted
    thinking = message.get("reasoning_content", message.get("reasoning"))
    if isinstance(thinking, str) and thinking:
        extra["thinking"] = thinking
    if role == "tool":
        name = message.get("name") or _tool_name(messages, message.get("tool_call_id"))
        if isinstance(name, str) and name:
            extra["tool_name"] = name
    content = message.get("content")
    if content is None:
        return [{"role": role, "content": ""} | extra] if calls else None
    if isinstance(content, str):
        return [{"role": role, "content": content} | extra]
    if not isinstance(content, list):
        return None
    parts: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, dict) or part.get("type") != "text":
            return None  # an image or audio part: not counted here
        if not isinstance(part.get("text"), str):
            return None
        parts.append({"role": role, "content": part["text"]})
    if parts:
        # As Ollama does: what the message carries besides its text goes on its last part.
        parts[-1] |= extra
    return parts


def _tool_calls(calls: object) -> list[dict[str, Any]] | None:
    if not isinstance(calls, list):
        return None
    converted = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            return None
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                return None
        if not isinstance(arguments, dict):
            return None
        converted.append({"function": {"name": function["name"], "arguments": arguments}})
    return converted


def _tool_name(messages: list[Any], call_id: object) -> str | None:
    """The name of the tool whose call `call_id` names, from the assistant turn that made it."""
    if not isinstance(call_id, str):
        return None
    for message in messages:
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict) and call.get("id") == call_id:
                function = call.get("function")
                name = function.get("name") if isinstance(function, dict) else None
                return name if isinstance(name, str) else None
    return None
