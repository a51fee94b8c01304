"""Anthropic's Messages API as a gateway surface: `/v1/messages` and its count_tokens."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from roundhouse.api.instances import InstanceInfo
from roundhouse.core.gateway.anthropic.reply import engine_error, from_chat, gateway_error
from roundhouse.core.gateway.anthropic.request import screen_messages, to_chat
from roundhouse.core.gateway.anthropic.stream import chat_to_messages, sse
from roundhouse.core.gateway.errors import GatewayError
from roundhouse.core.gateway.fields import CHAT, screen
from roundhouse.core.gateway.openai_surface import require_model
from roundhouse.core.gateway.surface import Plan, Prepared

# The catalog's names for the two (resources/engines/catalog.toml, `native_apis`): an engine
# may serve messages but not count_tokens (then only the count is worked out here).
MESSAGES_API = "anthropic"
COUNT_API = "anthropic-count"
MODELS_WHERE = "GET /v1/models"
# Where the engine says no prompt size: about this many bytes of JSON per token, which is
# what English text and code average in the tokenizers of current open models.
ESTIMATE_BYTES_PER_TOKEN = 4


@dataclass
class AnthropicPrepared(Prepared):
    """A Messages request checked, with the chat completion it becomes where translated."""

    chat: dict[str, Any] = field(default_factory=dict)
    stop_sequences: list[str] = field(default_factory=list)


def _prepare(body: dict[str, Any], media_domains: Sequence[str], count: bool) -> AnthropicPrepared:
    dropped = screen_messages(body, media_domains, count=count)
    model = require_model(body, MODELS_WHERE)
    chat = to_chat(body)
    # The translated request passes chat's own allowlist too: its image URLs are checked as
    # chat's are (those of the Messages body were, above, with their Anthropic names).
    screen(CHAT, chat, media_domains)
    stops = body.get("stop_sequences")
    return AnthropicPrepared(
        model=model,
        stream=not count and body.get("stream") is True,
        body=body,
        dropped=dropped,
        budget=None if count else (CHAT, chat),
        chat=chat,
        stop_sequences=[s for s in stops if isinstance(s, str)] if isinstance(stops, list) else [],
    )


def _passthrough_reply(status: int, raw: bytes) -> bytes:
    return raw if 200 <= status < 300 else engine_error(status, raw)


async def _passthrough_events(events: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The engine's own Anthropic events as they are; only the relay's error event (OpenAI's
    shape, when the engine broke off) is said in Anthropic's."""
    async for chunk in events:
        if chunk.startswith(b'data: {"error"'):
            try:
                error = json.loads(chunk[6:])["error"]
                chunk = sse("error", {"type": "error", "error": {"type": "api_error", **error}})
            except (ValueError, KeyError, TypeError):
                pass
        yield chunk


@dataclass(frozen=True)
class AnthropicSurface:
    """`POST /v1/messages`: passed through to an engine's own endpoint, else translated."""

    @property
    def name(self) -> str:
        return MESSAGES_API

    def prepare(self, body: dict[str, Any], media_domains: Sequence[str]) -> Prepared:
        return _prepare(body, media_domains, count=False)

    def plan(self, prepared: Prepared, info: InstanceInfo, native: str | None) -> Plan:
        assert isinstance(prepared, AnthropicPrepared)
        if native is not None:
            return Plan(
                native,
                prepared.body,
                "passthrough",
                changed=bool(prepared.dropped),
                reply=_passthrough_reply,
                events=_passthrough_events,
            )
        model, stops = prepared.model, prepared.stop_sequences

        def reply(status: int, raw: bytes) -> bytes:
            if not 200 <= status < 300:
                return engine_error(status, raw)
            return json.dumps(from_chat(raw, model, stops)).encode()

        return Plan(
            CHAT,
            dict(prepared.chat),  # the gateway sets the model and stream options on its copy
            "translated",
            reply=reply,
            events=chat_to_messages(model, stops),
            media_type="text/event-stream",
            needs_usage=True,
        )

    def error(self, exc: GatewayError) -> dict[str, Any]:
        return gateway_error(exc)


@dataclass(frozen=True)
class CountTokensSurface:
    """`POST /v1/messages/count_tokens`: passed through where the engine counts itself, else
    counted by the engine all the same: the translated request is generated for one token,
    and the engine's usage says how many tokens the prompt made (its own template and
    tokenizer, so the number is exact on every engine). Only an engine that reports no usage
    gets an estimate (ESTIMATE_BYTES_PER_TOKEN)."""

    @property
    def name(self) -> str:
        return COUNT_API

    def prepare(self, body: dict[str, Any], media_domains: Sequence[str]) -> Prepared:
        return _prepare(body, media_domains, count=True)

    def plan(self, prepared: Prepared, info: InstanceInfo, native: str | None) -> Plan:
        assert isinstance(prepared, AnthropicPrepared)
        if native is not None:
            return Plan(
                native,
                prepared.body,
                "passthrough",
                changed=bool(prepared.dropped),
                reply=_passthrough_reply,
            )
        chat = {**prepared.chat, "max_tokens": 1}
        chat.pop("stream", None)
        estimate = _estimate(prepared.chat)

        def reply(status: int, raw: bytes) -> bytes:
            if not 200 <= status < 300:
                return engine_error(status, raw)
            return json.dumps({"input_tokens": _prompt_tokens(raw) or estimate}).encode()

        return Plan(CHAT, chat, "translated", reply=reply)

    def error(self, exc: GatewayError) -> dict[str, Any]:
        return gateway_error(exc)


def _prompt_tokens(raw: bytes) -> int | None:
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    usage = body.get("usage") if isinstance(body, dict) else None
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None


def _estimate(chat: dict[str, Any]) -> int:
    counted = {k: chat[k] for k in ("messages", "tools") if k in chat}
    size = len(json.dumps(counted, ensure_ascii=False).encode())
    return max(1, size // ESTIMATE_BYTES_PER_TOKEN)
