"""OpenAI's Responses API as a gateway surface: `POST /v1/responses`, passed through to an
engine's own endpoint or translated to chat completions, with `previous_response_id`
served from the daemon's store either way (no engine Roundhouse runs keeps responses)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from roundhouse.api.instances import InstanceInfo
from roundhouse.core.gateway.errors import BadRequest, GatewayError
from roundhouse.core.gateway.fields import CHAT, screen
from roundhouse.core.gateway.openai_surface import require_model
from roundhouse.core.gateway.responses.passthrough import mark_cut, normalize
from roundhouse.core.gateway.responses.reply import engine_error, from_chat, gateway_error
from roundhouse.core.gateway.responses.request import input_items, screen_responses, to_chat
from roundhouse.core.gateway.responses.store import ResponseStore
from roundhouse.core.gateway.responses.stream import chat_to_responses
from roundhouse.core.gateway.surface import Plan, Prepared

# The catalog's name for it (resources/engines/catalog.toml, `native_apis`).
RESPONSES_API = "responses"


class PreviousResponseNotFound(BadRequest):
    code = "previous_response_not_found"
    param = "previous_response_id"


@dataclass
class ResponsesPrepared(Prepared):
    """A Responses request checked, its history filled in, and the chat completion it
    becomes where translated."""

    chat: dict[str, Any] = field(default_factory=dict)
    # The whole conversation's input: the stored one before `previous_response_id`, then
    # this request's.
    items: list[dict[str, Any]] = field(default_factory=list)
    # The request's settings as a reply echoes them.
    echo: dict[str, Any] = field(default_factory=dict)
    expanded: bool = False
    # Whether the body differs from the client's bytes (beyond dropped fields).
    rewritten: bool = False
    store: bool = True


@dataclass(frozen=True)
class ResponsesSurface:
    """`POST /v1/responses`; `store` keeps what `previous_response_id` names (one per
    daemon)."""

    store: ResponseStore

    @property
    def name(self) -> str:
        return RESPONSES_API

    def prepare(self, body: dict[str, Any], media_domains: Sequence[str]) -> Prepared:
        dropped = screen_responses(body, media_domains)
        model = require_model(body, "GET /v1/models")
        echo = {k: v for k, v in body.items() if k != "input"}
        items = input_items(body["input"])
        previous = body.pop("previous_response_id", None)
        expanded = previous is not None
        if previous is not None:
            history = self.store.get(previous) if isinstance(previous, str) else None
            if history is None:
                store = self.store
                raise PreviousResponseNotFound(
                    f"previous_response_id: no response {str(previous)[:80]!r} is kept here "
                    f"(the daemon keeps responses in memory for {int(store.ttl_s // 60)} "
                    f"minutes, the least recently used dropped first past {store.max_entries} "
                    f"responses or {store.max_bytes // (1024 * 1024)} MiB, none with store: "
                    "false or from before the daemon restarted). Send the whole conversation "
                    "in 'input' instead."
                )
            items = history + items
            body["input"] = items
        untyped = [i for i in items if "type" not in i]
        for item in untyped:
            # OpenAI takes a message without its type; llama-server's endpoint does not
            # (an assistant's is refused), so each goes on with it.
            item["type"] = "message"
        chat = to_chat(body)
        # The translated request passes chat's own allowlist too: its image URLs are checked
        # as chat's are.
        screen(CHAT, chat, media_domains)
        return ResponsesPrepared(
            model=model,
            stream=body.get("stream") is True,
            body=body,
            dropped=dropped,
            budget=(CHAT, chat),
            chat=chat,
            items=items,
            echo=echo,
            expanded=expanded,
            rewritten=expanded or bool(untyped),
            store=body.get("store") is not False,
        )

    def _keep(self, prepared: ResponsesPrepared, done: dict[str, Any]) -> None:
        rid, output = done.get("id"), done.get("output")
        if prepared.store and isinstance(rid, str) and isinstance(output, list):
            self.store.put(rid, prepared.items + output)

    def plan(self, prepared: Prepared, info: InstanceInfo, native: str | None) -> Plan:
        assert isinstance(prepared, ResponsesPrepared)
        if native is not None:
            return self._passthrough(prepared, native)
        model, echo = prepared.model, prepared.echo

        def reply(status: int, raw: bytes) -> bytes:
            if not 200 <= status < 300:
                return engine_error(status, raw)
            done = from_chat(raw, echo, model)
            self._keep(prepared, done)
            return json.dumps(done).encode()

        return Plan(
            CHAT,
            dict(prepared.chat),  # the gateway sets the model and stream options on its copy
            "translated",
            reply=reply,
            events=chat_to_responses(echo, model, lambda done: self._keep(prepared, done)),
            media_type="text/event-stream",
            needs_usage=True,
        )

    def _passthrough(self, prepared: ResponsesPrepared, native: str) -> Plan:
        model = prepared.model
        limit = prepared.body.get("max_output_tokens")
        limit = limit if isinstance(limit, int) else None

        def echo(done: dict[str, Any]) -> None:
            # The engine was sent the whole conversation: the client named where it began.
            if prepared.expanded:
                done["previous_response_id"] = prepared.echo.get("previous_response_id")

        def reply(status: int, raw: bytes) -> bytes:
            if not 200 <= status < 300:
                return engine_error(status, raw)
            try:
                done = json.loads(raw)
            except ValueError:
                return raw
            if not isinstance(done, dict):
                return raw
            done["model"] = model
            echo(done)
            mark_cut(done, limit)
            self._keep(prepared, done)
            return json.dumps(done).encode()

        return Plan(
            native,
            prepared.body,
            "passthrough",
            changed=bool(prepared.dropped) or prepared.rewritten,
            reply=reply,
            events=normalize(model, echo, lambda done: self._keep(prepared, done), limit),
        )

    def error(self, exc: GatewayError) -> dict[str, Any]:
        return gateway_error(exc)
