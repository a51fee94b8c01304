"""One client API on the gateway: how its requests reach an engine and its replies come back.

Every API the gateway serves (OpenAI chat, Anthropic Messages, OpenAI Responses, Ollama's)
goes through the same routing, queue, budget, cancellation and guards; a `Surface` says only
what differs: how its body is checked, which engine path and body a request becomes on a
given instance (the same API passed through where the engine speaks it, else translated to
chat completions), how a reply and a stream are turned back, and its errors' shape.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from roundhouse.api.instances import InstanceInfo
from roundhouse.core.gateway.errors import GatewayError

# How a request reached its engine: in the API the client spoke (the engine speaks it too),
# or translated to the engine's chat completions and back. Said in a reply header and counted
# in the metrics.
PathTaken = Literal["passthrough", "translated"]
PATH_HEADER = "x-roundhouse-path"

# Turns the engine's whole reply (its status and bytes) into the client's API.
ReplyConverter = Callable[[int, bytes], bytes]
# Turns the engine's server-sent events (each yield one or more whole events) into the
# client's stream.
StreamConverter = Callable[[AsyncIterator[bytes]], AsyncIterator[bytes]]


@dataclass
class Prepared:
    """A client's request checked before anything starts or queues."""

    model: str
    stream: bool
    body: dict[str, Any]
    # Fields dropped by the allowlist: named in the reply's header.
    dropped: list[str] = field(default_factory=list)
    # The request as the context budget reads it: an engine path ("chat/completions",
    # "completions") and its body. None: not checked.
    budget: tuple[str, dict[str, Any]] | None = None


@dataclass
class Plan:
    """What one request sends to one instance, and how its reply comes back."""

    # The engine path under the instance's base URL (which ends in /v1).
    path: str
    body: dict[str, Any]
    taken: PathTaken
    # False: the client's bytes go out exactly as they came (the model name aside).
    changed: bool = True
    # None: the reply goes back as the engine wrote it.
    reply: ReplyConverter | None = None
    events: StreamConverter | None = None
    # The media type of a converted stream (an engine's streams are text/event-stream).
    media_type: str | None = None
    # Whether the engine's stream must carry usage even when the client did not ask for it:
    # a converter that reads the counts from it and says them in its own events.
    needs_usage: bool = False
    # Set by the gateway as it sends: whether the usage-only chunk goes on to the client.
    forward_usage: bool = True


class Surface(Protocol):
    """One client API the gateway serves."""

    @property
    def name(self) -> str:
        """The API's short name in the metrics: "openai", "anthropic", "responses"..."""
        ...

    def prepare(self, body: dict[str, Any], media_domains: Sequence[str]) -> Prepared:
        """Check and screen the client's body; raise a GatewayError (BadRequest) to refuse."""
        ...

    def plan(self, prepared: Prepared, info: InstanceInfo, native: str | None) -> Plan:
        """What to send to `info` for `prepared`: passed through to the engine's `native`
        path for this API where it has one (see NativeApis), else translated."""
        ...

    def error(self, exc: GatewayError) -> dict[str, Any]:
        """The body of an error the gateway answers itself, in this API's shape."""
        ...
