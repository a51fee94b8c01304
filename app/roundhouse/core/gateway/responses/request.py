"""An OpenAI Responses request: screened by its own field list, and translated to chat
completions for engines that do not speak it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from roundhouse.core.gateway.errors import BadRequest
from roundhouse.core.gateway.fields import REFUSED, FieldRefused, check_media_url

# OpenAI's own request fields (openai-python's ResponseCreateParams) that a local engine can
# act on or that the gateway reads itself, forwarded when passed through; every other field
# is dropped and named, as for OpenAI's chat (fields.py).
RESPONSES_FIELDS = frozenset(
    {
        "model", "input", "instructions", "max_output_tokens", "metadata",
        "parallel_tool_calls", "previous_response_id", "reasoning", "store", "stream",
        "stream_options", "temperature", "text", "tool_choice", "tools", "top_p", "user",
        "safety_identifier", "prompt_cache_key", "include", "service_tier", "truncation",
        "top_logprobs", "background",
    }
)  # fmt: skip
# Fields that need OpenAI's servers (stored prompts, conversations, background runs): a
# request that counts on them cannot run here, so they are refused rather than dropped.
SERVER_ONLY: dict[str, str] = {
    "conversation": "conversations are kept by OpenAI's servers; send the turns in 'input', "
    "or chain responses with 'previous_response_id'",
    "prompt": "stored prompt templates are kept by OpenAI's servers; send the prompt in "
    "'instructions' and 'input'",
}
# Input items a local engine can be given; the others (built-in tool calls and their
# results, item references, compaction) come from OpenAI's own servers.
ITEM_TYPES = frozenset({"message", "function_call", "function_call_output", "reasoning"})
PART_TYPES = frozenset({"input_text", "output_text", "input_image", "refusal", "text"})
ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


def screen_responses(body: dict[str, Any], media_domains: Sequence[str]) -> list[str]:
    """Drop from `body`, in place, the fields the Responses API does not forward, and return
    their names; raise FieldRefused for a field the gateway never forwards or a media URL on
    a host not allowed, BadRequest for a request that cannot run here."""
    dropped: list[str] = []
    for name in body:
        if name in RESPONSES_FIELDS:
            continue
        reason = REFUSED.get(name) or SERVER_ONLY.get(name)
        if reason is not None:
            raise FieldRefused(
                f"The gateway does not forward '{name}': {reason}. Remove it from the "
                "request (docs/gateway-security.md lists what is forwarded).",
                name,
            )
        dropped.append(name)
    for name in dropped:
        del body[name]
    if body.get("background") is True:
        raise FieldRefused(
            "background: a background response needs OpenAI's servers to keep and poll it; "
            "send the request without 'background' (stream it for a long reply).",
            "background",
        )
    body.pop("background", None)
    _check_items(input_items(body.get("input")), media_domains)
    _tools(body.get("tools"))
    limit = body.get("max_output_tokens")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise BadRequest("max_output_tokens: a whole number of at least 1, or leave it out.")
    return dropped


def input_items(value: object) -> list[dict[str, Any]]:
    """The request's `input` as a list of items (a string is one user message)."""
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    if not isinstance(value, list) or not value:
        raise BadRequest("input: send a string, or a list of input items such as {role, content}.")
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise BadRequest(f"input.{i}: each input item is an object.")
    return value


def _check_items(items: list[dict[str, Any]], domains: Sequence[str]) -> None:
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        at = f"input.{i}"
        if kind not in ITEM_TYPES:
            raise BadRequest(
                f"{at}: input items of type {str(kind)[:40]!r} are not served here; the "
                f"gateway takes {', '.join(sorted(ITEM_TYPES))}."
            )
        if kind == "message":
            if item.get("role") not in ROLES:
                raise BadRequest(
                    f"{at}.role: 'user', 'assistant', 'system' or 'developer' is required."
                )
            content = item.get("content")
            if isinstance(content, list):
                _parts(content, f"{at}.content", domains)
            elif not isinstance(content, str):
                raise BadRequest(f"{at}.content: a string or a list of content parts.")
        elif kind == "function_call":
            if not isinstance(item.get("name"), str) or not isinstance(item.get("call_id"), str):
                raise BadRequest(f"{at}: a function_call needs its call_id and name.")
        elif kind == "function_call_output" and not isinstance(item.get("call_id"), str):
            raise BadRequest(f"{at}.call_id: the call_id of the function_call it answers.")


def _parts(parts: list[Any], where: str, domains: Sequence[str]) -> None:
    for j, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, dict) else None
        at = f"{where}.{j}"
        if kind not in PART_TYPES:
            raise BadRequest(
                f"{at}: content parts of type {str(kind)[:40]!r} are not served here; the "
                f"gateway takes {', '.join(sorted(PART_TYPES))} (files: send their text)."
            )
        if kind == "input_image":
            assert isinstance(part, dict)
            url = part.get("image_url")
            if not isinstance(url, str):
                raise BadRequest(
                    f"{at}.image_url: the image as a data: URL or an http(s) URL (file ids "
                    "are OpenAI's servers' own)."
                )
            check_media_url(url, f"{at}.image_url", domains)


def _tools(tools: object) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise BadRequest("tools: a list of {type: 'function', name, parameters}.")
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise BadRequest(f"tools.{i}: each tool is an object.")
        if tool.get("type") != "function":
            raise BadRequest(
                f"tools.{i}: {str(tool.get('type'))[:40]!r} is a tool OpenAI's servers run; a "
                "local model cannot. Send it as a function tool with parameters."
            )
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise BadRequest(f"tools.{i}.name: each function tool needs a name.")


def to_chat(body: dict[str, Any]) -> dict[str, Any]:
    """The chat completions request that asks an engine what `body` (screened) asks."""
    chat: dict[str, Any] = {"model": body["model"], "messages": chat_messages(body)}
    if "max_output_tokens" in body:
        chat["max_tokens"] = body["max_output_tokens"]
    for name in ("temperature", "top_p", "stream", "parallel_tool_calls"):
        if body.get(name) is not None:
            chat[name] = body[name]
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        chat["tools"] = [_chat_tool(t) for t in tools]
        choice = _tool_choice(body.get("tool_choice"))
        if choice is not None:
            chat["tool_choice"] = choice
    user = body.get("safety_identifier", body.get("user"))
    if isinstance(user, str):
        chat["user"] = user
    text = body.get("text")
    fmt = text.get("format") if isinstance(text, dict) else None
    if isinstance(fmt, dict):
        if fmt.get("type") == "json_schema":
            schema: dict[str, Any] = {"name": fmt.get("name") or "response"}
            for name in ("schema", "strict", "description"):
                if name in fmt:
                    schema[name] = fmt[name]
            chat["response_format"] = {"type": "json_schema", "json_schema": schema}
        elif fmt.get("type") == "json_object":
            chat["response_format"] = {"type": "json_object"}
    reasoning = body.get("reasoning")
    effort = reasoning.get("effort") if isinstance(reasoning, dict) else None
    if isinstance(effort, str):
        chat["reasoning_effort"] = effort
    return chat


def _chat_tool(tool: dict[str, Any]) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool["name"]}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    params = tool.get("parameters")
    function["parameters"] = params if isinstance(params, dict) else {"type": "object"}
    if isinstance(tool.get("strict"), bool):
        function["strict"] = tool["strict"]
    return {"type": "function", "function": function}


def _tool_choice(choice: object) -> object:
    if choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function":
        name = choice.get("name")
        if isinstance(name, str):
            return {"type": "function", "function": {"name": name}}
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        mode = choice.get("mode")
        return mode if mode in ("auto", "required") else None
    return None


def chat_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat messages of `instructions` and `input`: consecutive function calls (and the
    reasoning before them) make one assistant turn, each function output a tool message."""
    out: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        out.append({"role": "system", "content": instructions})
    reasoning: list[str] = []
    for item in input_items(body.get("input")):
        kind = item.get("type", "message")
        if kind == "reasoning":
            reasoning.append(reasoning_text(item))
        elif kind == "function_call":
            turn = out[-1] if out and _open_assistant(out[-1]) else None
            if turn is None:
                turn = {"role": "assistant", "content": ""}
                out.append(turn)
            _add_reasoning(turn, reasoning)
            turn.setdefault("tool_calls", []).append(
                {
                    "id": item["call_id"],
                    "type": "function",
                    "function": {"name": item["name"], "arguments": _arguments(item)},
                }
            )
        elif kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item["call_id"], "content": _text(item)})
        else:
            role = ROLES[item["role"]]
            message: dict[str, Any] = {"role": role, "content": _content(item.get("content"))}
            if role == "assistant":
                message["content"] = _text_of(item.get("content"))
                _add_reasoning(message, reasoning)
            out.append(message)
    return out


def _open_assistant(message: dict[str, Any]) -> bool:
    """Whether function calls that follow join this turn: an assistant's, nothing after."""
    return bool(message["role"] == "assistant")


def _add_reasoning(turn: dict[str, Any], reasoning: list[str]) -> None:
    # As reasoning_content, which llama.cpp's and vLLM's templates put back in the prompt.
    text = "".join(r for r in reasoning if r)
    if text:
        turn["reasoning_content"] = turn.get("reasoning_content", "") + text
    reasoning.clear()


def reasoning_text(item: dict[str, Any]) -> str:
    """A reasoning item's text: its reasoning_text content, else its summary."""
    for key in ("content", "summary"):
        parts = item.get(key)
        if isinstance(parts, list):
            text = "".join(
                p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
            if text:
                return text
    return ""


def _arguments(item: dict[str, Any]) -> str:
    arguments = item.get("arguments")
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)


def _text(item: dict[str, Any]) -> str:
    output = item.get("output")
    if isinstance(output, str):
        return output
    return _text_of(output)


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
    )


def _content(content: object) -> str | list[dict[str, Any]]:
    """A message's content for chat: text as a string (some engines' templates take no
    parts), parts where an image is among them."""
    if isinstance(content, str) or not isinstance(content, list):
        return content if isinstance(content, str) else ""
    if not any(isinstance(p, dict) and p.get("type") == "input_image" for p in content):
        return _text_of(content)
    parts: list[dict[str, Any]] = []
    for part in content:
        if part.get("type") == "input_image":
            image: dict[str, Any] = {"url": part["image_url"]}
            if part.get("detail") in ("low", "high", "auto"):
                image["detail"] = part["detail"]
            parts.append({"type": "image_url", "image_url": image})
        elif isinstance(part.get("text"), str):
            parts.append({"type": "text", "text": part["text"]})
    return parts
