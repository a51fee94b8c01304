"""Chat completions with reasoning and tool calls in the exact shapes three engines send.

A scripted reply (reasoning, then a tool call or words) is cut into pieces the way a parser
streams them, and each piece becomes the chunk that engine writes:

- llama.cpp (tools/server/server-task.cpp, server-chat.cpp; nlohmann::ordered_json, keys
  in the order the code sets them, no spaces; checked against a real llama-server's plain
  replies): first delta {"role":"assistant","content":null}; reasoning in
  `reasoning_content`; a tool call's first delta has `id`, `type` and `function.name`, the
  next ones `function.arguments` pieces; the finish chunk has an empty delta; with
  include_usage a last chunk with `choices: []` and `usage`; `timings` on the last chunk.
- vLLM (entrypoints/openai/serving_chat.py; pydantic, exclude_unset): first delta
  {"role":"assistant","content":""}; reasoning in `reasoning` (vLLM 0.11.0 and older:
  `reasoning_content`); tool call ids `chatcmpl-tool-...`; finish chunk with `stop_reason`.
- SGLang (srt/entrypoints/openai/serving_chat.py; pydantic model_dump_json: every field,
  null when unset): reasoning in `reasoning_content`; `matched_stop` on every choice; tool
  call ids `call_` + 24 hex, id and name on the first delta only, null after.

Every id is derived from the request, so the same request gets the same bytes (but for
`created`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

SHAPES = ("llamacpp", "vllm", "sglang")
# What a scripted turn says: the stand-in always calls the request's first tool with these.
TOOL_ARGUMENTS = {"location": "Paris, France", "unit": "celsius"}
ARGUMENT_PIECES = ('{"location": "', "Paris", ", France", '", "unit": "', "celsius", '"}')
REASONING_PIECES = ("The user", " asks", " about", " the weather", ";", " I should", " look.")
LLAMACPP_BUILD = "b7000-standin"


@dataclass(frozen=True)
class Piece:
    """One streamed step: 'reasoning' or 'content' text, or a tool call's 'name' or 'args'."""

    kind: str
    text: str


@dataclass(frozen=True)
class Script:
    """A whole reply: its pieces, the tool it calls (if any) and why it ended."""

    pieces: tuple[Piece, ...]
    tool_name: str | None
    finish_reason: str

    @property
    def reasoning(self) -> str:
        return "".join(p.text for p in self.pieces if p.kind == "reasoning")

    @property
    def content(self) -> str:
        return "".join(p.text for p in self.pieces if p.kind == "content")

    @property
    def arguments(self) -> str:
        return "".join(p.text for p in self.pieces if p.kind == "args")


def script(
    *, think: bool, tool_name: str | None, words: Sequence[str], finish_reason: str
) -> Script:
    """Reasoning first when the model thinks, then a call to `tool_name` or the words."""
    pieces = [Piece("reasoning", t) for t in REASONING_PIECES] if think else []
    if tool_name is not None:
        pieces.append(Piece("name", tool_name))
        pieces += [Piece("args", t) for t in ARGUMENT_PIECES]
        return Script(tuple(pieces), tool_name, "tool_calls")
    pieces += [Piece("content", w) for w in words]
    return Script(tuple(pieces), None, finish_reason)


def first_tool_name(body: dict[str, Any]) -> str | None:
    """The tool a scripted turn calls: the first in `tools`, unless tool_choice is none."""
    tools = body.get("tools")
    if not tools or body.get("tool_choice") == "none":
        return None
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        return str(choice.get("function", {}).get("name"))
    function = tools[0].get("function", {}) if isinstance(tools[0], dict) else {}
    return str(function.get("name", "tool"))


def tool_call_id(shape: str, seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).hexdigest()
    if shape == "vllm":
        return f"chatcmpl-tool-{digest[:32]}"
    if shape == "sglang":
        return f"call_{digest[:24]}"
    # llama.cpp: random_string(), 32 letters and digits
    return digest[:32]


def completion_id(shape: str, seed: str) -> str:
    digest = hashlib.sha256(("id" + seed).encode()).hexdigest()
    return f"chatcmpl-{digest[:32]}"


def dumps(shape: str, payload: object) -> bytes:
    """As the engines serialize: no spaces, keys in the order they were set."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


class Writer:
    """Builds one reply's chunks (streamed) or its whole body, in one engine's shape."""

    def __init__(
        self,
        shape: str,
        *,
        completion: str,
        model: str,
        created: int,
        call_id: str,
        reasoning_field: str,
    ) -> None:
        self.shape = shape
        self.completion = completion
        self.model = model
        self.created = created
        self.call_id = call_id
        # vLLM's name for it moved: reasoning_content, then both, then reasoning alone.
        self.reasoning_fields = (
            ("reasoning", "reasoning_content") if reasoning_field == "both" else (reasoning_field,)
        )
        self._named = False

    # -- streamed ---------------------------------------------------------------------------

    def _chunk(self, choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        if self.shape == "llamacpp":
            return {
                "choices": choices,
                "created": self.created,
                "id": self.completion,
                "model": self.model,
                "system_fingerprint": LLAMACPP_BUILD,
                "object": "chat.completion.chunk",
                **extra,
            }
        head = {
            "id": self.completion,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }
        if self.shape == "sglang":
            head["usage"] = extra.pop("usage", None)
        return head | extra

    def _choice(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        if self.shape == "llamacpp":
            return {"finish_reason": finish, "index": 0, "delta": delta}
        if self.shape == "vllm":
            return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        full = {"role": None, "content": None, "reasoning_content": None, "tool_calls": None}
        return {
            "index": 0,
            "delta": full | delta,
            "logprobs": None,
            "finish_reason": finish,
            "matched_stop": None,
        }

    def first(self) -> dict[str, Any]:
        content = None if self.shape == "llamacpp" else ""
        return self._chunk([self._choice({"role": "assistant", "content": content})])

    def piece(self, piece: Piece) -> dict[str, Any]:
        if piece.kind == "reasoning":
            field = "reasoning_content" if self.shape != "vllm" else None
            names = (field,) if field else self.reasoning_fields
            return self._chunk([self._choice(dict.fromkeys(names, piece.text))])
        if piece.kind == "content":
            return self._chunk([self._choice({"content": piece.text})])
        return self._chunk([self._choice({"tool_calls": [self._tool_delta(piece)]})])

    def _tool_delta(self, piece: Piece) -> dict[str, Any]:
        name = piece.text if piece.kind == "name" else None
        args = piece.text if piece.kind == "args" else None
        if self.shape == "llamacpp":
            call: dict[str, Any] = {"index": 0}
            if name is not None:
                call |= {"id": self.call_id, "type": "function"}
            call["function"] = {"name": name} if name is not None else {"arguments": args}
            return call
        if self.shape == "vllm":
            if name is not None:
                return {
                    "id": self.call_id,
                    "type": "function",
                    "index": 0,
                    "function": {"name": name},
                }
            return {"index": 0, "function": {"arguments": args}}
        # SGLang: the name comes with empty arguments; later pieces carry null id and name.
        return {
            "id": self.call_id if name is not None else None,
            "index": 0,
            "type": "function",
            "function": {"name": name, "arguments": args if args is not None else ""},
        }

    def finish(self, reason: str, timings: dict[str, Any] | None) -> dict[str, Any]:
        if self.shape == "vllm":
            choice = self._choice({}, reason) | {"stop_reason": None}
            return self._chunk([choice])
        chunk = self._chunk([self._choice({}, reason)])
        if self.shape == "llamacpp" and timings is not None:
            chunk["timings"] = timings
        return chunk

    def usage_chunk(self, usage: dict[str, Any], timings: dict[str, Any] | None) -> dict[str, Any]:
        chunk = self._chunk([], usage=usage)
        if self.shape == "llamacpp" and timings is not None:
            chunk["timings"] = timings
        return chunk

    # -- whole --------------------------------------------------------------------------------

    def whole(
        self, reply: Script, usage: dict[str, Any], timings: dict[str, Any] | None
    ) -> dict[str, Any]:
        call = {
            "id": self.call_id,
            "type": "function",
            "function": {"name": reply.tool_name, "arguments": reply.arguments},
        }
        calls = [call] if reply.tool_name else []
        if self.shape == "llamacpp":
            message: dict[str, Any] = {"role": "assistant", "content": reply.content}
            if reply.reasoning:
                message["reasoning_content"] = reply.reasoning
            if calls:
                # common_chat_msg::to_json_oaicompat: type, function, then id.
                message["tool_calls"] = [
                    {"type": "function", "function": call["function"], "id": self.call_id}
                ]
            body = {
                "choices": [{"finish_reason": reply.finish_reason, "index": 0, "message": message}],
                "created": self.created,
                "model": self.model,
                "system_fingerprint": LLAMACPP_BUILD,
                "object": "chat.completion",
                "usage": usage,
                "id": self.completion,
            }
            if timings is not None:
                body["timings"] = timings
            return body
        if self.shape == "vllm":
            message = {
                "role": "assistant",
                "content": reply.content or None,
                "refusal": None,
                "annotations": None,
                "audio": None,
                "function_call": None,
                "tool_calls": calls,
            }
            message |= dict.fromkeys(self.reasoning_fields, reply.reasoning or None)
            choice: dict[str, Any] = {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.finish_reason,
                "stop_reason": None,
            }
        else:
            sglang_call = {"id": self.call_id, "index": 0, "type": "function"}
            sglang_call["function"] = call["function"]
            message = {
                "role": "assistant",
                "content": reply.content or None,
                "reasoning_content": reply.reasoning or None,
                "tool_calls": [sglang_call] if calls else None,
            }
            choice = {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.finish_reason,
                "matched_stop": None,
            }
        return {
            "id": self.completion,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
            "usage": usage,
        }


def usage_for(shape: str, prompt: int, completion: int) -> dict[str, Any]:
    if shape == "llamacpp":
        return {
            "completion_tokens": completion,
            "prompt_tokens": prompt,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0},
        }  # usage_json_oaicompat's order
    return {
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion,
        "completion_tokens": completion,
        "prompt_tokens_details": None,
    }


def timings_for(shape: str, prompt: int, completion: int) -> dict[str, Any] | None:
    """llama.cpp's timings (fixed pretend rates: 1 ms a prompt token, 2 ms a new one)."""
    if shape != "llamacpp":
        return None
    return {
        "cache_n": 0,
        "prompt_n": prompt,
        "prompt_ms": float(prompt),
        "prompt_per_token_ms": 1.0,
        "prompt_per_second": 1000.0,
        "predicted_n": completion,
        "predicted_ms": 2.0 * completion,
        "predicted_per_token_ms": 2.0,
        "predicted_per_second": 500.0,
    }
