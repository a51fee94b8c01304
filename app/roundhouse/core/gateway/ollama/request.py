"""Ollama's requests as the OpenAI requests every engine serves: chat, generate, embed.

Ollama's fields are mapped to OpenAI's (`options.num_predict` → `max_tokens`, `format` →
`response_format`, `images` → `image_url` parts, tool calls' argument objects → JSON
strings...). What cannot apply to a running engine (`num_ctx`, `keep_alive`, load-time
options) is dropped and named in the reply's `x-roundhouse-dropped-fields`; what would change
the answer's meaning if ignored (`suffix`, `template`, `context`) is refused in words.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from roundhouse.core.gateway.errors import BadRequest

MODELS_WHERE = "GET /api/tags"

# options → the OpenAI (or engine sampling) field of the same meaning.
_OPTIONS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "min_p": "min_p",
    "typical_p": "typical_p",
    "seed": "seed",
    "stop": "stop",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "repeat_penalty": "repeat_penalty",
    "repeat_last_n": "repeat_last_n",
    "mirostat": "mirostat",
    "mirostat_tau": "mirostat_tau",
    "mirostat_eta": "mirostat_eta",
}
# Ollama's top-level fields each request takes (besides its own: messages, prompt...); any
# other is dropped and named.
_COMMON = frozenset({"model", "stream", "options", "format", "keep_alive", "think", "tools"})
# Image types by their first bytes: a data URL must say its type.
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"BM", "image/bmp"),
)


@dataclass
class Translated:
    """An Ollama request as the engine's OpenAI request, and what was left out."""

    path: str
    body: dict[str, Any]
    dropped: list[str] = field(default_factory=list)
    # think: false: the engine is asked not to reason, and any reasoning it sends is not shown.
    hide_thinking: bool = False


def require_model(body: dict[str, Any]) -> str:
    # Ollama's older clients send `name` where newer send `model`.
    model = body.get("model", body.get("name"))
    if not isinstance(model, str) or not model.strip():
        raise BadRequest(f"The request names no model: set 'model' to one from {MODELS_WHERE}.")
    return model.strip()


def is_stream(body: dict[str, Any]) -> bool:
    """Ollama streams unless told not to."""
    return body.get("stream") is not False


def _options(body: dict[str, Any], out: dict[str, Any], dropped: list[str]) -> None:
    options = body.get("options")
    if options is None:
        return
    if not isinstance(options, dict):
        raise BadRequest(
            "'options' must be an object of Ollama's options, e.g. {\"temperature\": 0.2}."
        )
    for name, value in options.items():
        if value is None:
            continue
        if name == "num_predict":
            if not isinstance(value, int) or isinstance(value, bool):
                raise BadRequest("'options.num_predict' must be a whole number.")
            # -1 (no limit) and -2 (fill the context) leave the engine's own limit.
            if value >= 0:
                out["max_tokens"] = value
        elif name in _OPTIONS:
            out[_OPTIONS[name]] = value
        else:
            # num_ctx, num_gpu, num_thread... are load-time settings of Ollama's own runner:
            # the instance was started with its own (its preset, or the fit estimate's).
            dropped.append(f"options.{name}")


def _format(body: dict[str, Any], out: dict[str, Any]) -> None:
    fmt = body.get("format")
    if fmt is None or fmt == "":
        return
    if fmt == "json":
        out["response_format"] = {"type": "json_object"}
    elif isinstance(fmt, dict):
        out["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": fmt, "strict": True},
        }
    else:
        raise BadRequest("'format' must be \"json\" or a JSON schema object.")


def _think(body: dict[str, Any], out: dict[str, Any]) -> bool:
    """Ask the engine for reasoning or not; True when reasoning must not be shown."""
    think = body.get("think")
    if think is None:
        return False
    if think is False:
        # The switch chat templates read (Qwen3, DeepSeek, GPT-OSS...): no reasoning.
        out["chat_template_kwargs"] = {"enable_thinking": False}
        return True
    if think is True:
        out["chat_template_kwargs"] = {"enable_thinking": True}
    elif think in ("low", "medium", "high"):
        out["chat_template_kwargs"] = {"enable_thinking": True}
        out["reasoning_effort"] = think
    else:
        raise BadRequest('\'think\' must be true, false, "low", "medium" or "high".')
    return False


def image_url(image: object, where: str) -> dict[str, Any]:
    """A base64 image of Ollama's `images` as a chat `image_url` part with a data URL."""
    if not isinstance(image, str) or not image:
        raise BadRequest(f"{where} must be a base64-encoded image.")
    if image.startswith("data:"):
        return {"type": "image_url", "image_url": {"url": image}}
    try:
        head = base64.b64decode(image[:64] + "=" * (-len(image[:64]) % 4), validate=False)
        base64.b64decode(image, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest(
            f"{where} is not base64: {exc}. Send the image file's bytes in base64."
        ) from exc
    mime = next((m for magic, m in _MAGIC if head.startswith(magic)), None)
    if mime is None and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        mime = "image/webp"
    if mime is None:
        raise BadRequest(f"{where} is not a PNG, JPEG, GIF, WebP or BMP image.")
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{image}"}}


def _content(text: object, images: object, where: str) -> str | list[dict[str, Any]]:
    if text is not None and not isinstance(text, str):
        raise BadRequest(f"{where}.content must be a string.")
    if images is None or images == []:
        return text or ""
    if not isinstance(images, list):
        raise BadRequest(f"{where}.images must be a list of base64-encoded images.")
    parts: list[dict[str, Any]] = [
        image_url(image, f"{where}.images[{i}]") for i, image in enumerate(images)
    ]
    if text:
        parts.append({"type": "text", "text": text})
    return parts


def _tool_calls(calls: object, where: str, ids: list[str], turn: int) -> list[dict[str, Any]]:
    """An assistant's Ollama tool calls as OpenAI's, each with an id a tool result can name
    (Ollama's own calls may carry none: one is made from the message's place)."""
    if not isinstance(calls, list):
        raise BadRequest(f"{where}.tool_calls must be a list.")
    out = []
    for i, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise BadRequest(f"{where}.tool_calls[{i}] needs a function with a name.")
        arguments = function.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        given = call.get("id") if isinstance(call, dict) else None
        call_id = given if isinstance(given, str) and given else f"call_{turn}_{i}"
        ids.append(call_id)
        out.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": function["name"], "arguments": text},
            }
        )
    return out


def chat_messages(messages: object) -> list[dict[str, Any]]:
    """Ollama's chat messages as OpenAI's: images as parts, tool calls with ids, and each
    tool result ("tool" role) tied to the call it answers (by id, by name, else in turn)."""
    if not isinstance(messages, list):
        raise BadRequest("'messages' must be a list of {role, content} objects.")
    out: list[dict[str, Any]] = []
    # Calls not yet answered: (id, name).
    waiting: list[tuple[str, str]] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise BadRequest(f"{where} must be an object with a 'role'.")
        role = message["role"]
        content = _content(message.get("content"), message.get("images"), where)
        if role == "tool":
            out.append(_tool_result(message, content, waiting, where))
            continue
        entry: dict[str, Any] = {"role": role, "content": content}
        if role == "assistant":
            thinking = message.get("thinking")
            if isinstance(thinking, str) and thinking:
                entry["reasoning_content"] = thinking
            if message.get("tool_calls"):
                ids: list[str] = []
                entry["tool_calls"] = calls = _tool_calls(message["tool_calls"], where, ids, i)
                waiting = [(c["id"], c["function"]["name"]) for c in calls]
        out.append(entry)
    return out


def _tool_result(
    message: dict[str, Any], content: object, waiting: list[tuple[str, str]], where: str
) -> dict[str, Any]:
    given = message.get("tool_call_id")
    name = message.get("tool_name", message.get("name"))
    match = None
    if isinstance(given, str) and given:
        match = next((w for w in waiting if w[0] == given), (given, name or ""))
    elif isinstance(name, str) and name:
        match = next((w for w in waiting if w[1] == name), None)
    if match is None and waiting:
        match = waiting[0]
    if match is None:
        raise BadRequest(
            f"{where} is a tool result with no tool call before it: send the assistant "
            "message with its tool_calls first."
        )
    if match in waiting:
        waiting.remove(match)
    if not isinstance(content, str):
        raise BadRequest(f"{where}.content of a tool result must be a string.")
    return {"role": "tool", "tool_call_id": match[0], "content": content}


def _generation(
    body: dict[str, Any], own: frozenset[str]
) -> tuple[dict[str, Any], list[str], bool]:
    """The fields chat and generate share: options, format, think, stream, the rest dropped."""
    out: dict[str, Any] = {}
    dropped = [n for n in body if n not in _COMMON and n not in own]
    _options(body, out, dropped)
    _format(body, out)
    hide = _think(body, out)
    if body.get("keep_alive") is not None:
        # Roundhouse keeps instances by its own residency settings (gateway.idle_ttl_s).
        dropped.append("keep_alive")
    out["stream"] = is_stream(body)
    return out, dropped, hide


def chat(body: dict[str, Any]) -> Translated:
    """`/api/chat` → chat/completions."""
    out, dropped, hide = _generation(body, frozenset({"messages", "name"}))
    out["messages"] = chat_messages(body.get("messages", []))
    tools = body.get("tools")
    if tools:
        if not isinstance(tools, list):
            raise BadRequest("'tools' must be a list of {type: function, function: {...}}.")
        out["tools"] = tools
    return Translated("chat/completions", out, dropped, hide)


def generate(body: dict[str, Any]) -> Translated:
    """`/api/generate` → chat/completions with the prompt as the user's message (the model's
    own chat template applies, as Ollama's does), or completions for a `raw` prompt."""
    for name, why in (
        ("suffix", "fill-in-the-middle is not served through Ollama's API here"),
        ("template", "the engine applies the model's own chat template"),
        ("context", "no conversation state is kept between requests; send /api/chat messages"),
    ):
        if body.get(name):
            raise BadRequest(f"'{name}' is not supported: {why}. Remove it from the request.")
    own = frozenset({"prompt", "system", "images", "raw", "name", "suffix", "template", "context"})
    out, dropped, hide = _generation(body, own)
    if body.get("tools") is not None:
        dropped.append("tools")  # Ollama's generate takes none: /api/chat does
    prompt = body.get("prompt") or ""
    if not isinstance(prompt, str):
        raise BadRequest("'prompt' must be a string.")
    system = body.get("system")
    if system is not None and not isinstance(system, str):
        raise BadRequest("'system' must be a string.")
    if body.get("raw") is True:
        if body.get("images"):
            raise BadRequest("'images' need the chat template: remove 'raw' or the images.")
        out.pop("chat_template_kwargs", None)
        out.pop("reasoning_effort", None)
        out["prompt"] = (system + "\n\n" if system else "") + prompt
        return Translated("completions", out, dropped, hide)
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": _content(prompt, body.get("images"), "request")})
    out["messages"] = messages
    return Translated("chat/completions", out, dropped, hide)


def embed(body: dict[str, Any], legacy: bool) -> Translated:
    """`/api/embed` (`input`: a string or a list) or the older `/api/embeddings` (`prompt`)
    → embeddings."""
    own = frozenset({"prompt"} if legacy else {"input", "truncate", "dimensions"})
    dropped = [
        n for n in body if n not in own and n not in {"model", "name", "options", "keep_alive"}
    ]
    if body.get("options"):
        dropped += (
            [f"options.{name}" for name in body["options"]]
            if isinstance(body["options"], dict)
            else ["options"]
        )
    if body.get("keep_alive") is not None:
        dropped.append("keep_alive")
    key = "prompt" if legacy else "input"
    given = body.get(key)
    if isinstance(given, str):
        inputs: list[str] = [given]
    elif not legacy and isinstance(given, list) and all(isinstance(s, str) for s in given):
        inputs = list(given)
    else:
        kind = "a string" if legacy else "a string or a list of strings"
        raise BadRequest(f"'{key}' must be {kind}.")
    out: dict[str, Any] = {"input": inputs, "encoding_format": "float"}
    if not legacy and body.get("dimensions") is not None:
        out["dimensions"] = body["dimensions"]
    if not legacy and body.get("truncate") is False:
        dropped.append("truncate")
    return Translated("embeddings", out, dropped)
