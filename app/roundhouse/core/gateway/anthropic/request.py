"""An Anthropic Messages request: screened by its own field list, and translated to chat
completions for engines that do not speak it."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from roundhouse.core.gateway.errors import BadRequest
from roundhouse.core.gateway.fields import REFUSED, FieldRefused, check_media_url

# Anthropic's own request fields (anthropic-sdk-python's MessageCreateParams), forwarded when
# passed through; every other field is dropped and named, as for OpenAI's (fields.py).
MESSAGES_FIELDS = frozenset(
    {
        "model", "messages", "max_tokens", "system", "stop_sequences", "stream",
        "temperature", "top_p", "top_k", "tools", "tool_choice", "metadata", "thinking",
        "service_tier",
    }
)  # fmt: skip
# count_tokens takes the request less what only matters to generating.
COUNT_FIELDS = frozenset({"model", "messages", "system", "tools", "tool_choice", "thinking"})
# Content blocks a local engine can be given; the others (server tool results, containers,
# search results...) come from Anthropic's own servers.
BLOCK_TYPES = frozenset(
    {"text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking"}
)
# Tools Anthropic's servers run (web search, code execution...) carry a dated `type` and no
# input_schema: a local engine cannot run them.
CUSTOM_TOOL_TYPES = frozenset({None, "custom"})
# Claude Code opens its system prompt with a billing line whose checksum changes with every
# request (`x-anthropic-billing-header: cc_version=...; cch=1c8b4;`): left so, no engine could
# reuse its cached prompt from one turn to the next. Held fixed, as llama-server's own
# endpoint does (ggml-org/llama.cpp#21793).
_BILLING_CHECKSUM = re.compile(r"(x-anthropic-billing-header:[^\n]*?\bcch=)[0-9a-fA-F]{5}\b")


def screen_messages(
    body: dict[str, Any], media_domains: Sequence[str], *, count: bool = False
) -> list[str]:
    """Drop from `body`, in place, the fields Anthropic's API (or count_tokens) does not
    have, and return their names; raise FieldRefused for a field the gateway never forwards
    or a media URL on a host not allowed, BadRequest for a request that cannot run."""
    allowed = COUNT_FIELDS if count else MESSAGES_FIELDS
    dropped: list[str] = []
    for name in body:
        if name in allowed:
            continue
        if name in REFUSED:
            raise FieldRefused(
                f"The gateway does not forward '{name}': {REFUSED[name]}. Remove it from the "
                "request (docs/gateway-security.md lists what is forwarded).",
                name,
            )
        dropped.append(name)
    for name in dropped:
        del body[name]
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages: send at least one message, as a list of {role, content}.")
    if not count:
        max_tokens = body.get("max_tokens")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise BadRequest("max_tokens: a whole number of at least 1 is required.")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise BadRequest(f"messages.{i}: each message needs a role, 'user' or 'assistant'.")
        content = message.get("content")
        if isinstance(content, list):
            _blocks(content, f"messages.{i}.content", media_domains)
        elif not isinstance(content, str):
            raise BadRequest(f"messages.{i}.content: a string or a list of content blocks.")
    _tools(body.get("tools"))
    return dropped


def _blocks(blocks: list[Any], where: str, domains: Sequence[str]) -> None:
    for j, block in enumerate(blocks):
        at = f"{where}.{j}"
        if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES:
            kind = block.get("type") if isinstance(block, dict) else None
            raise BadRequest(
                f"{at}: content blocks of type {str(kind)[:40]!r} are not served here; the "
                f"gateway takes {', '.join(sorted(BLOCK_TYPES))}."
            )
        source = block.get("source")
        if block["type"] in ("image", "document"):
            if not isinstance(source, dict):
                raise BadRequest(f"{at}.source: an {block['type']} needs a source.")
            _source(block["type"], source, f"{at}.source", domains)
        inner = block.get("content")
        if block["type"] == "tool_result" and isinstance(inner, list):
            _result_blocks(inner, f"{at}.content", domains)


def _result_blocks(blocks: list[Any], where: str, domains: Sequence[str]) -> None:
    """A tool result's own blocks: any type a client's tools return (newer clients add
    their own, such as tool references); only their text and images reach a translated
    request, and every image's source is checked."""
    for j, block in enumerate(blocks):
        if isinstance(block, dict) and block.get("type") == "image":
            source = block.get("source")
            if not isinstance(source, dict):
                raise BadRequest(f"{where}.{j}.source: an image needs a source.")
            _source("image", source, f"{where}.{j}.source", domains)


def _source(kind: str, source: dict[str, Any], where: str, domains: Sequence[str]) -> None:
    """An image or document source: inline data, or a URL on an allowed host."""
    source_type = source.get("type")
    if source_type == "url" and kind == "image":
        url = source.get("url")
        if not isinstance(url, str):
            raise BadRequest(f"{where}.url: the image's URL, a string.")
        check_media_url(url, f"{where}.url", domains)
    elif source_type == "base64" and kind == "image":
        if not isinstance(source.get("data"), str):
            raise BadRequest(f"{where}.data: the image's bytes in base64, a string.")
    elif not (kind == "document" and source_type == "text"):
        raise BadRequest(
            f"{where}: a {kind} from a {str(source_type)[:20]!r} source is not served here; send "
            "images inline (base64) or by URL, and documents as text."
        )


def _tools(tools: object) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise BadRequest("tools: a list of {name, description, input_schema}.")
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise BadRequest(f"tools.{i}: each tool needs a name.")
        if tool.get("type") not in CUSTOM_TOOL_TYPES:
            raise BadRequest(
                f"tools.{i}: {str(tool.get('type'))[:40]!r} is a tool Anthropic's servers run; a "
                "local model cannot. Send it as a custom tool with an input_schema."
            )


def to_chat(body: dict[str, Any]) -> dict[str, Any]:
    """The chat completions request that asks an engine what `body` (screened) asks."""
    chat: dict[str, Any] = {"model": body["model"], "messages": _chat_messages(body)}
    if "max_tokens" in body:
        chat["max_tokens"] = body["max_tokens"]
    for name in ("temperature", "top_p", "top_k", "stream"):
        if name in body:
            chat[name] = body[name]
    stop = body.get("stop_sequences")
    if isinstance(stop, list) and stop:
        chat["stop"] = stop
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        chat["tools"] = [_chat_tool(t) for t in tools]
        _tool_choice(body.get("tool_choice"), chat)
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("user_id"), str):
        chat["user"] = metadata["user_id"]
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") in ("enabled", "disabled"):
        # The switch templates of thinking models read (Qwen3, DeepSeek, GLM...); others
        # ignore it. The budget has no counterpart in chat completions.
        chat["chat_template_kwargs"] = {"enable_thinking": thinking["type"] == "enabled"}
    return chat


def _chat_tool(tool: dict[str, Any]) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool["name"]}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    schema = tool.get("input_schema")
    function["parameters"] = schema if isinstance(schema, dict) else {"type": "object"}
    return {"type": "function", "function": function}


def _tool_choice(choice: object, chat: dict[str, Any]) -> None:
    if not isinstance(choice, dict):
        return
    kind = choice.get("type")
    if kind == "auto":
        chat["tool_choice"] = "auto"
    elif kind == "any":
        chat["tool_choice"] = "required"
    elif kind == "none":
        chat["tool_choice"] = "none"
    elif kind == "tool" and isinstance(choice.get("name"), str):
        chat["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
    if choice.get("disable_parallel_tool_use") is True:
        chat["parallel_tool_calls"] = False


def _chat_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    system = _BILLING_CHECKSUM.sub(r"\g<1>fffff", _text_of(body.get("system")))
    if system:
        out.append({"role": "system", "content": system})
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            out.append({"role": message["role"], "content": content})
        elif message["role"] == "assistant":
            out.append(_assistant(content))
        else:
            out.extend(_user(content))
    return out


def _text_of(value: object) -> str:
    """A system prompt or tool result as text: a string, or the text of its blocks."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        return ""
    return "\n".join(
        b["text"] for b in value if isinstance(b, dict) and isinstance(b.get("text"), str)
    )


def _assistant(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """An assistant turn: its text, its thinking as reasoning_content (which llama.cpp's and
    vLLM's templates put back in the prompt), its tool_use blocks as tool calls."""
    texts = [b["text"] for b in blocks if b["type"] == "text" and isinstance(b.get("text"), str)]
    thinking = [
        b["thinking"]
        for b in blocks
        if b["type"] == "thinking" and isinstance(b.get("thinking"), str)
    ]
    calls = [
        {
            "id": b.get("id") or f"call_{i}",
            "type": "function",
            "function": {
                "name": b.get("name", ""),
                "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False),
            },
        }
        for i, b in enumerate(blocks)
        if b["type"] == "tool_use"
    ]
    # "" rather than null beside tool calls: some templates print a null content as "None".
    turn: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if thinking:
        turn["reasoning_content"] = "".join(thinking)
    if calls:
        turn["tool_calls"] = calls
    return turn


def _user(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A user turn: each tool_result becomes a `tool` message (first, as chat templates
    expect them right after the assistant's calls), the rest one user message."""
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in blocks:
        kind = block["type"]
        if kind == "tool_result":
            inner = block.get("content")
            text = _text_of(inner)
            if block.get("is_error") is True:
                text = f"Error: {text}"
            out.append(
                {"role": "tool", "tool_call_id": block.get("tool_use_id", ""), "content": text}
            )
            if isinstance(inner, list):
                # Images a tool returned: the model sees them in the user turn that follows.
                parts.extend(
                    _image(b) for b in inner if isinstance(b, dict) and b.get("type") == "image"
                )
        elif kind == "text" and isinstance(block.get("text"), str):
            parts.append({"type": "text", "text": block["text"]})
        elif kind == "image":
            parts.append(_image(block))
        elif kind == "document":
            parts.append({"type": "text", "text": str(block["source"].get("data", ""))})
    if parts and all(p["type"] == "text" for p in parts):
        # Plain text as a string: some engines' templates (mlx_lm's among them) take no parts.
        out.append({"role": "user", "content": "\n".join(p["text"] for p in parts)})
    elif parts:
        out.append({"role": "user", "content": parts})
    return out


def _image(block: dict[str, Any]) -> dict[str, Any]:
    source = block["source"]
    if source.get("type") == "url":
        url = source["url"]
    else:
        url = f"data:{source.get('media_type', 'image/png')};base64,{source['data']}"
    return {"type": "image_url", "image_url": {"url": url}}
