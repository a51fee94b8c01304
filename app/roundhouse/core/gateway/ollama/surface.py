"""Ollama's generation and embedding routes as gateway surfaces: always translated to the
engine's OpenAI paths (every engine Roundhouse runs speaks them, Ollama itself included)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from roundhouse.api.instances import InstanceInfo
from roundhouse.core.gateway.errors import GatewayError
from roundhouse.core.gateway.fields import screen
from roundhouse.core.gateway.ollama import request
from roundhouse.core.gateway.ollama.reply import (
    Clock,
    engine_error,
    gateway_error,
    whole_chat,
    whole_embed,
)
from roundhouse.core.gateway.ollama.stream import to_ndjson
from roundhouse.core.gateway.surface import Plan, Prepared

OLLAMA_API = "ollama"
NDJSON = "application/x-ndjson"
# Ollama's names carry a tag; a model Roundhouse lists without one is the same model.
LATEST = ":latest"

Route = Literal["chat", "generate", "embed", "embeddings"]


@dataclass
class OllamaPrepared(Prepared):
    """An Ollama request checked, with the OpenAI request it becomes."""

    translated: request.Translated = field(default_factory=lambda: request.Translated("", {}))
    clock: Clock = field(default_factory=lambda: Clock(Clock.now()))


def without_latest(name: str, known: Callable[[str], bool]) -> str:
    """`name` as listed: "tiny:latest" is "tiny" when only that is known."""
    if name.endswith(LATEST) and not known(name):
        bare = name.removesuffix(LATEST)
        if bare and known(bare):
            return bare
    return name


@dataclass(frozen=True)
class OllamaSurface:
    """One of `/api/chat`, `/api/generate`, `/api/embed`, `/api/embeddings`. `known` says
    whether the gateway lists a name (asked only of names ending in ":latest")."""

    route: Route
    known: Callable[[str], bool] = lambda _name: True

    @property
    def name(self) -> str:
        return OLLAMA_API

    def prepare(self, body: dict[str, Any], media_domains: Sequence[str]) -> Prepared:
        clock = Clock(Clock.now())
        model = without_latest(request.require_model(body), self.known)
        if self.route == "chat":
            translated = request.chat(body)
        elif self.route == "generate":
            translated = request.generate(body)
        else:
            translated = request.embed(body, legacy=self.route == "embeddings")
        # Through the gateway's own allowlist too: the image URLs made here are checked as
        # a chat request's are, and nothing unvetted reaches the engine.
        translated.body["model"] = model
        dropped = translated.dropped + screen(translated.path, translated.body, media_domains)
        stream = self.route in ("chat", "generate") and request.is_stream(body)
        budget = (translated.path, translated.body)
        return OllamaPrepared(
            model=model,
            stream=stream,
            body=body,
            dropped=dropped,
            budget=budget,
            translated=translated,
            clock=clock,
        )

    def plan(self, prepared: Prepared, info: InstanceInfo, native: str | None) -> Plan:
        assert isinstance(prepared, OllamaPrepared)
        clock = prepared.clock
        clock.sent = Clock.now()
        translated = prepared.translated
        model = prepared.model
        route = self.route
        generate = route == "generate"
        hide = translated.hide_thinking

        def reply(status: int, raw: bytes) -> bytes:
            if not 200 <= status < 300:
                return engine_error(status, raw)
            if route in ("embed", "embeddings"):
                out = whole_embed(raw, model, clock, legacy=route == "embeddings")
            else:
                out = whole_chat(raw, model, clock, generate, hide)
            return json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode()

        return Plan(
            translated.path,
            dict(translated.body),  # the gateway sets the model and stream options on its copy
            "translated",
            reply=reply,
            events=to_ndjson(model, clock, generate, hide) if prepared.stream else None,
            media_type=NDJSON,
            needs_usage=True,
        )

    def error(self, exc: GatewayError) -> dict[str, Any]:
        return gateway_error(exc)
