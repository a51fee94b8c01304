"""OpenAI's own API on the gateway (chat, completions, embeddings): passed through as sent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from roundhouse.api.instances import InstanceInfo
from roundhouse.core.gateway.errors import BadRequest, GatewayError
from roundhouse.core.gateway.fields import screen
from roundhouse.core.gateway.surface import Plan, Prepared


def openai_error_body(
    message: str, kind: str, code: str | None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def require_model(body: dict[str, Any], where: str) -> str:
    """The request's `model`, or a BadRequest saying where the names are listed."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest(f"The request names no model: set 'model' to one from {where}.")
    return model


@dataclass(frozen=True)
class OpenAISurface:
    """One OpenAI path (`chat/completions`, `completions`, `embeddings`): every engine
    Roundhouse runs speaks it, so the client's body goes on unchanged."""

    path: str

    @property
    def name(self) -> str:
        return "openai"

    def prepare(self, body: dict[str, Any], media_domains: Sequence[str]) -> Prepared:
        # Before anything starts or queues: a refused request changes nothing.
        dropped = screen(self.path, body, media_domains)
        model = require_model(body, "GET /v1/models")
        return Prepared(
            model=model,
            stream=body.get("stream") is True,
            body=body,
            dropped=dropped,
            budget=(self.path, body),
        )

    def plan(self, prepared: Prepared, info: InstanceInfo, native: str | None) -> Plan:
        return Plan(self.path, prepared.body, "passthrough", changed=bool(prepared.dropped))

    def error(self, exc: GatewayError) -> dict[str, Any]:
        return openai_error_body(exc.message, exc.kind, exc.code, exc.param)
