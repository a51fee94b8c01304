"""What the gateway needs of instances on paired machines: the list, the key, the pinned TLS."""

from __future__ import annotations

import ssl
from typing import Protocol

from roundhouse.api.instances import InstanceInfo, InstanceOrigin

# A peer's gateway serves every client API itself: a request is passed through to the path
# the client used, and the peer's own gateway translates where its engine needs it.
PEER_PATHS = {
    "anthropic": "messages",
    "anthropic-count": "messages/count_tokens",
    "responses": "responses",
}


class RemoteInstances(Protocol):
    """Instances on paired machines (core/peers keeps them; the composition root joins)."""

    def instances(self) -> list[InstanceInfo]:
        """The paired machines' instances as this gateway routes to them, ready ones first."""
        ...

    def key(self, info: InstanceInfo) -> str | None:
        """The key this daemon calls `info`'s machine with."""
        ...

    def context(self, info: InstanceInfo) -> ssl.SSLContext | None:
        """A TLS context that trusts exactly the certificate pinned for `info`'s machine."""
        ...


class NoRemote:
    """No paired machines."""

    def instances(self) -> list[InstanceInfo]:
        return []

    def key(self, info: InstanceInfo) -> str | None:
        return None

    def context(self, info: InstanceInfo) -> ssl.SSLContext | None:
        return None


def is_peer(info: InstanceInfo) -> bool:
    return info.origin == InstanceOrigin.PEER


def peer_prefix(info: InstanceInfo) -> str:
    """The machine's part of a `machine/model` id: its name, else its id."""
    return info.name or info.machine or ""


def peer_name(info: InstanceInfo, model: str) -> str:
    return f"{peer_prefix(info)}/{model}"
